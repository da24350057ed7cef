//  bench/http.mjs - the one HTTP/1.1 JSON request the bench load generators
//  share: keep-alive through the caller's agent, JSON body in and out.

import http from 'node:http';

//  Returns request(agent, method, path, body) → {status, body (parsed JSON
//  or null)} against `url` (a URL). With timeoutMs, a request with no
//  answer in time fails.
export function makeRequest (url, timeoutMs = 0) {
    return (agent, method, path, body) => new Promise((resolve, reject) => {
        const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
        const req = http.request({
            host: url.hostname, port: url.port, method, path, agent,
            headers: {
                ...(data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {}),
                //  bench/proxy.sh: an API key (through queen-proxy) or a JWT (straight)
                ...(process.env.QN_BENCH_KEY ? { Authorization: `Bearer ${process.env.QN_BENCH_KEY}` } : {}),
            },
        }, (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => {
                const text = Buffer.concat(chunks).toString();
                let json = null;
                if (text.length && (res.headers['content-type'] || '').includes('json'))
                    json = JSON.parse(text);
                resolve({ status: res.statusCode, body: json });
            });
        });
        req.on('error', reject);
        if (timeoutMs)
            req.setTimeout(timeoutMs, () => req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs / 1000} s`)));
        if (data)
            req.write(data);
        req.end();
    });
}
