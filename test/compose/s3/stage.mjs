//  test/compose/s3/stage.mjs DIR - the build context of the S3 stand-in:
//  this directory's files plus node_modules/ holding s3rver and every
//  package it needs, copied from the project's own npm install (the same
//  s3rver the sink's tests use; package.json pins it). Run by
//  test/compose/run.sh: the image then builds without reaching a registry.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const modules = fs.realpathSync(path.join(root, 'node_modules'));
const out = path.resolve(process.argv[2] || '');
if (!process.argv[2])
    throw new Error('usage: node stage.mjs DIR');

//  Node's lookup: DIR/node_modules/NAME, then each parent's node_modules.
function locate (from, name) {
    for (let dir = from; dir.startsWith(modules); dir = path.dirname(dir)) {
        const cand = path.join(dir, 'node_modules', name);
        if (fs.existsSync(path.join(cand, 'package.json')))
            return cand;
        if (dir === modules)
            break;
    }
    const top = path.join(modules, name);
    if (fs.existsSync(path.join(top, 'package.json')))
        return top;
    return null;
}

const found = new Set();
const queue = [path.join(modules, 's3rver')];
while (queue.length) {
    const dir = queue.shift();
    if (found.has(dir))
        continue;
    found.add(dir);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    for (const [name, optional] of [...Object.keys(pkg.dependencies || {}).map((n) => [n, false]),
        ...Object.keys(pkg.optionalDependencies || {}).map((n) => [n, true])]) {
        const at = locate(dir, name);
        if (at)
            queue.push(at);
        else if (!optional)
            throw new Error(`${name} (needed by ${pkg.name}) is not installed: npm ci`);
    }
}
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });
for (const f of ['Dockerfile', 'server.js', 'init.js'])
    fs.copyFileSync(path.join(here, f), path.join(out, f));
for (const dir of found) {
    const rel = path.relative(modules, dir);
    //  A package's own files; its nested node_modules are copied only for
    //  the packages found in them.
    fs.cpSync(dir, path.join(out, 'node_modules', rel), {
        recursive: true, dereference: true,
        filter: (src) => !path.relative(dir, src).split(path.sep).includes('node_modules'),
    });
}
process.stdout.write(`s3 stand-in: ${found.size} packages staged in ${out}\n`);
