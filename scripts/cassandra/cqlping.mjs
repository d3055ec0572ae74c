// Minimal CQL readiness probe with no dependencies (Node >= 18).
//
//   node scripts/cassandra/cqlping.mjs [host] [port] [timeoutMs]
//
// Speaks the CQL native protocol v4 directly: STARTUP, then
// QUERY "SELECT release_version FROM system.local" at consistency ONE.
// Prints the release version and exits 0 when the query answers with rows;
// exits 1 (message on stderr) otherwise. Used by scripts/services.sh to decide
// that Cassandra is really ready, not just listening.
import net from 'node:net';

const host = process.argv[2] ?? '127.0.0.1';
const port = Number(process.argv[3] ?? 9042);
const timeoutMs = Number(process.argv[4] ?? 5000);

const OP = { ERROR: 0x00, STARTUP: 0x01, READY: 0x02, QUERY: 0x07, RESULT: 0x08 };

function frame(stream, opcode, body) {
  const h = Buffer.alloc(9);
  h.writeUInt8(0x04, 0); // request, protocol v4
  h.writeUInt8(0, 1); // flags
  h.writeInt16BE(stream, 2);
  h.writeUInt8(opcode, 4);
  h.writeInt32BE(body.length, 5);
  return Buffer.concat([h, body]);
}
const str = (s) => {
  const b = Buffer.from(s, 'utf8');
  const l = Buffer.alloc(2);
  l.writeUInt16BE(b.length);
  return Buffer.concat([l, b]);
};
const longStr = (s) => {
  const b = Buffer.from(s, 'utf8');
  const l = Buffer.alloc(4);
  l.writeInt32BE(b.length);
  return Buffer.concat([l, b]);
};

function fail(msg) {
  process.stderr.write(`cqlping: ${msg}\n`);
  process.exit(1);
}

const timer = setTimeout(() => fail(`timeout after ${timeoutMs} ms`), timeoutMs);
const sock = net.connect({ host, port });
sock.on('error', (e) => fail(e.message));

let buf = Buffer.alloc(0);
sock.on('connect', () => {
  const n = Buffer.alloc(2);
  n.writeUInt16BE(1);
  sock.write(frame(1, OP.STARTUP, Buffer.concat([n, str('CQL_VERSION'), str('3.0.0')])));
});
sock.on('data', (chunk) => {
  buf = Buffer.concat([buf, chunk]);
  while (buf.length >= 9) {
    const len = buf.readInt32BE(5);
    if (buf.length < 9 + len) return;
    const opcode = buf.readUInt8(4);
    const body = buf.subarray(9, 9 + len);
    buf = buf.subarray(9 + len);
    handle(opcode, body);
  }
});

function handle(opcode, body) {
  if (opcode === OP.ERROR) {
    const code = body.readInt32BE(0);
    const mlen = body.readUInt16BE(4);
    fail(`server error 0x${code.toString(16)}: ${body.subarray(6, 6 + mlen).toString('utf8')}`);
  }
  if (opcode === OP.READY) {
    const q = longStr('SELECT release_version FROM system.local');
    const params = Buffer.from([0x00, 0x01, 0x00]); // consistency ONE, no flags
    sock.write(frame(2, OP.QUERY, Buffer.concat([q, params])));
    return;
  }
  if (opcode === OP.RESULT) {
    const kind = body.readInt32BE(0);
    if (kind !== 2) fail(`unexpected result kind ${kind}`);
    let o = 4;
    const flags = body.readInt32BE(o); o += 4;
    const cols = body.readInt32BE(o); o += 4;
    if (flags & 0x0002) { const l = body.readInt32BE(o); o += 4 + Math.max(l, 0); } // paging state
    const skipStr = () => { const l = body.readUInt16BE(o); o += 2 + l; };
    if (flags & 0x0001) { skipStr(); skipStr(); } // global table spec
    for (let i = 0; i < cols; i++) {
      if (!(flags & 0x0001)) { skipStr(); skipStr(); }
      skipStr(); // column name
      o += 2; // type id (varchar, no extra option)
    }
    const rows = body.readInt32BE(o); o += 4;
    if (rows < 1) fail('system.local returned no rows');
    const l = body.readInt32BE(o); o += 4;
    const version = l >= 0 ? body.subarray(o, o + l).toString('utf8') : '(null)';
    clearTimeout(timer);
    process.stdout.write(`${version}\n`);
    sock.end();
    process.exit(0);
  }
  fail(`unexpected opcode 0x${opcode.toString(16)}`);
}
