/**
 * One gzip stream made of pieces compressed apart (issue 20): a register's
 * large parts are compressed once per change, its small per-request pieces
 * on the fly, and the answer is their deflate data back to back in one gzip
 * member. Each piece is raw deflate ended by a full flush (byte-aligned, no
 * final block, no reference to another piece's bytes), so pieces join as
 * they are; an empty final block ends the data, and the trailer's CRC-32
 * is the pieces' CRCs combined (`crc32Combine`, O(log length) each) and its
 * length their sum. A single member: every gzip decoder reads it (browsers
 * do not all read several members).
 */
import { promisify } from 'node:util';
import { constants, crc32, deflateRaw, deflateRawSync } from 'node:zlib';

const deflateRawAsync = promisify(deflateRaw);

/** Bytes compressed as one piece of a gzip stream: raw deflate ended by a full flush. */
export interface DeflatedPiece {
  data: Buffer;
  /** CRC-32 of the bytes it inflates to. */
  crc: number;
  /** How many bytes it inflates to. */
  size: number;
}

/** `bytes` as a piece of a gzip stream (`level`: zlib's 1-9; a part kept for many answers is worth more time). */
export function deflatePiece(bytes: Buffer, level = 1): DeflatedPiece {
  return { data: deflateRawSync(bytes, { level, finishFlush: constants.Z_FULL_FLUSH }), crc: crc32(bytes), size: bytes.length };
}

/** As `deflatePiece`, compressed on libuv's threads: the caller's thread only computes the CRC. */
export async function deflatePieceAsync(bytes: Buffer, level = 6): Promise<DeflatedPiece> {
  const data = await deflateRawAsync(bytes, { level, finishFlush: constants.Z_FULL_FLUSH });
  return { data, crc: crc32(bytes), size: bytes.length };
}

/** gzip's header: deflate, no name or time, unknown OS. */
const HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff]);
/** An empty final block (fixed Huffman codes: BFINAL 1, BTYPE 01, end of block), byte-aligned. */
const FINAL_BLOCK = Buffer.from([0x03, 0x00]);

/** One gzip member of `pieces` in order, as a list of buffers to write back to back. */
export function gzipJoin(pieces: readonly DeflatedPiece[]): Buffer[] {
  let crc = 0;
  let size = 0;
  for (const p of pieces) {
    crc = crc32Combine(crc, p.crc, p.size);
    size += p.size;
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(size % 2 ** 32, 4);
  return [HEADER, ...pieces.map((p) => p.data), FINAL_BLOCK, trailer];
}

/**
 * CRC-32 arithmetic (the reflected polynomial of gzip) on polynomials over
 * GF(2) modulo P: the CRC of A then B is CRC(A) times x^(8·len(B)), plus
 * CRC(B). As zlib's crc32_combine computes it; Node's zlib does not expose it.
 */
const POLY = 0xedb88320;

/** a·b mod P, in the bit-reflected form (bit 31 is x^0). */
function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** x^(2^k) mod P for k = 0..31. */
const X2N: number[] = [];
X2N[0] = 0x40000000; // x^1
for (let k = 1; k < 32; k++) X2N[k] = multModP(X2N[k - 1]!, X2N[k - 1]!);

/** x^(n·2^k) mod P. */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** The CRC-32 of A followed by B, from A's CRC, B's CRC and B's length in bytes. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(x2nModP(lengthB, 3), crcA >>> 0) ^ (crcB >>> 0)) >>> 0;
}
