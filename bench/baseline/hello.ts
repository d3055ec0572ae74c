/**
 * The ceiling for one gateway process: the smallest uWebSockets.js route,
 * answering every request with a fixed text. Bench ratios divide Parley's
 * throughput by this one's, measured minutes apart on the same machine.
 *
 *   PORT=9990 node --import tsx bench/baseline/hello.ts   # prints "listening <port>"
 */
import uWS from 'uWebSockets.js';

if (typeof uWS.getParts !== 'function') throw new Error('uWebSockets.js native binary did not load');

const port = Number(process.env.PORT ?? 0);
uWS
  .App()
  .any('/*', (res) => {
    // A POST body is not read: the answer is the same whatever was sent.
    res.cork(() => res.writeHeader('Content-Type', 'text/plain').end('Hello World!'));
  })
  .listen('127.0.0.1', port, (socket) => {
    if (!socket) {
      process.stderr.write(`cannot listen on 127.0.0.1:${port}\n`);
      process.exit(1);
    }
    process.stdout.write(`listening ${uWS.us_socket_local_port(socket)}\n`);
  });

process.on('SIGTERM', () => process.exit(0));
