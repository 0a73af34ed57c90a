// Draws the app icons (a ring on the brand colour) as PNGs into public/icons, with no
// dependency: raw RGBA rows compressed with zlib, wrapped in PNG chunks.
import { mkdirSync, writeFileSync } from 'node:fs';
import { deflateSync } from 'node:zlib';

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc32 = (buf) => {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type, data) => {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
};

function icon(size, maskable) {
  const rows = [];
  const c = size / 2;
  const outer = size * (maskable ? 0.3 : 0.38);
  const inner = outer * 0.72;
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 4);
    for (let x = 0; x < size; x++) {
      const dx = x + 0.5 - c;
      const dy = y + 0.5 - c;
      const d = Math.hypot(dx, dy);
      const corner = maskable ? 0 : size * 0.2;
      const inBg = maskable || insideRounded(x, y, size, corner);
      let rgba = [0, 0, 0, 0];
      if (inBg) rgba = [15, 118, 110, 255];
      // The ring, three quarters drawn like a running timer.
      const angle = Math.atan2(dx, -dy);
      if (inBg && d <= outer && d >= inner) {
        rgba = angle >= -Math.PI && angle <= Math.PI / 2 ? [255, 255, 255, 255] : [124, 200, 190, 255];
      }
      row.set(rgba, 1 + x * 4);
    }
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8;
  ihdr[9] = 6;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(rows), { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

function insideRounded(x, y, size, r) {
  const cx = Math.min(Math.max(x + 0.5, r), size - r);
  const cy = Math.min(Math.max(y + 0.5, r), size - r);
  return Math.hypot(x + 0.5 - cx, y + 0.5 - cy) <= r;
}

const dir = new URL('../public/icons/', import.meta.url);
mkdirSync(dir, { recursive: true });
writeFileSync(new URL('icon-192.png', dir), icon(192, false));
writeFileSync(new URL('icon-512.png', dir), icon(512, false));
writeFileSync(new URL('maskable-512.png', dir), icon(512, true));
