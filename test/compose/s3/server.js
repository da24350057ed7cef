//  s3rver as MinIO's stand-in: the key pair of MINIO_ROOT_USER /
//  MINIO_ROOT_PASSWORD, objects in /data, port 9000 on every address,
//  one log line per request. Signature V4 is checked as S3 does.
'use strict';
const S3rver = require('s3rver');
const account = require('s3rver/lib/models/account');

const user = process.env.MINIO_ROOT_USER || 'minioadmin';
const password = process.env.MINIO_ROOT_PASSWORD || 'minioadmin';
account.DUMMY_ACCOUNT.createKeyPair(user, password);

const server = new S3rver({
    address: '0.0.0.0',
    port: Number(process.env.S3_PORT || 9000),
    directory: process.env.S3_DIRECTORY || '/data',
    silent: process.env.S3_SILENT === 'true',
    vhostBuckets: false,
});
server.run().then((addr) => {
    process.stdout.write(`s3: listening on ${addr.address}:${addr.port} (key ${user})\n`);
}, (err) => {
    process.stderr.write(`s3: ${err.stack || err}\n`);
    process.exit(1);
});
for (const sig of ['SIGTERM', 'SIGINT'])
    process.on(sig, () => server.close().then(() => process.exit(0), () => process.exit(0)));
