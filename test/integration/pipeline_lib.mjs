//  test/integration/pipeline_lib.mjs - raw pipelined clients for the door
//  back-pressure tests (backpressure, kafka_backpressure, sink_backpressure).
//
//  pipelined() writes every request of `requests` (Buffers or strings) at
//  once on one connection, does not read for pauseMs (the socket is
//  paused: TCP pushes back on the broker), then reads; it resolves to what
//  `parse` took out of the answers, in order, once `requests.length`
//  arrived or nothing arrived for idleMs.
import net from 'node:net';

export function pipelined (port, requests, parse, { pauseMs = 0, idleMs = 30000 } = {}) {
    return new Promise((resolve, reject) => {
        const got = [];
        let buf = Buffer.alloc(0);
        const sock = net.connect({ port, host: '127.0.0.1' });
        let timer;
        const finish = () => { clearTimeout(timer); sock.destroy(); resolve(got); };
        const idle = () => { clearTimeout(timer); timer = setTimeout(finish, idleMs); };
        sock.once('error', reject);
        sock.once('connect', () => {
            sock.pause();
            sock.write(Buffer.concat(requests.map((r) => Buffer.from(r))));
            setTimeout(() => { idle(); sock.resume(); }, pauseMs);
        });
        sock.on('data', (chunk) => {
            idle();
            buf = Buffer.concat([buf, chunk]);
            try {
                buf = parse(buf, got);
            } catch (e) {
                sock.destroy();
                reject(e);
                return;
            }
            if (got.length === requests.length)
                finish();
        });
        sock.once('end', finish);
    });
}

//  HTTP/1.1 answers (Content-Length bodies): pushes each status.
export function httpStatuses (buf, got) {
    for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0)
            return buf;
        const head = buf.subarray(0, end).toString('latin1');
        const m = /^HTTP\/1\.1 (\d{3}) /.exec(head);
        if (!m)
            throw new Error(`not an HTTP response: ${head.slice(0, 80)}`);
        const cl = /\r\ncontent-length: *(\d+)/i.exec(head);
        const len = cl ? Number(cl[1]) : 0;
        if (buf.length < end + 4 + len)
            return buf;
        got.push(Number(m[1]));
        buf = buf.subarray(end + 4 + len);
    }
}

//  Kafka answers (INT32 size prefix, header v0): pushes each correlation id.
export function kafkaCorrelations (buf, got) {
    while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const n = buf.readInt32BE(0);
        got.push(buf.readInt32BE(4));
        buf = buf.subarray(4 + n);
    }
    return buf;
}

//  Counts answers missing and out of place over every connection's
//  results, expected(i) being the i-th answer of a connection.
export function tally (results, perConn, expected) {
    let missing = 0, misplaced = 0;
    for (const got of results) {
        missing += perConn - got.length;
        got.forEach((v, i) => {
            if (v !== expected(i))
                misplaced++;
        });
    }
    return { missing, misplaced };
}
