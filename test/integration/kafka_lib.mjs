//  test/integration/kafka_lib.mjs - helpers shared by the Kafka door's tests.
import { spawn } from 'node:child_process';

//  Runs kcat against broker address B with args (stdin from input);
//  resolves to { code, out, err }. Unbuffered (-u) so nothing is lost when
//  it exits; killed and rejected after timeoutMs.
export function kcatRun (B, args, { input, timeoutMs = 30000 } = {}) {
    return new Promise((resolve, reject) => {
        const p = spawn('kcat', ['-b', B, '-u', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        p.stdout.on('data', (c) => { out += c; });
        p.stderr.on('data', (c) => { err += c; });
        const timer = setTimeout(() => {
            p.kill('SIGKILL');
            reject(new Error(`kcat ${args.join(' ')} did not finish in ${timeoutMs} ms:\n${out}\n${err}`));
        }, timeoutMs);
        p.on('close', (code) => {
            clearTimeout(timer);
            resolve({ code, out, err });
        });
        p.stdin.end(input ?? '');
    });
}
