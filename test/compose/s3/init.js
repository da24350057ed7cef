//  Creates the buckets named in argv on the S3 service at S3_URL (default
//  http://minio:9000), retrying until it answers, as `mc mb --ignore-existing`
//  does in compose.yaml's minio-init: an existing bucket is fine.
'use strict';
const base = process.env.S3_URL || 'http://minio:9000';
const buckets = process.argv.slice(2);

async function create (bucket) {
    for (let i = 0; i < 120; i++) {
        try {
            const res = await fetch(`${base}/${bucket}`, { method: 'PUT' });
            const body = await res.text();
            if (res.status === 200 || /BucketAlreadyOwnedByYou|BucketAlreadyExists/.test(body)) {
                process.stdout.write(`s3-init: bucket ${bucket} ready\n`);
                return;
            }
            process.stderr.write(`s3-init: ${bucket}: HTTP ${res.status} ${body.slice(0, 200)}\n`);
        } catch (err) {
            if (i % 10 === 0)
                process.stderr.write(`s3-init: ${base} not answering yet (${err.cause?.code || err.message})\n`);
        }
        await new Promise((r) => setTimeout(r, 1000));
    }
    process.stderr.write(`s3-init: gave up on ${bucket}\n`);
    process.exit(1);
}
(async () => {
    for (const b of buckets)
        await create(b);
})();
