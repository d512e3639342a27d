/** Etags as the stores hand them out: opaque, quoted like S3's (`"…"`), compared leniently. */
import { createHash } from 'node:crypto';

/** The etag of a local file: the SHA-256 of its bytes, hex, in S3-style quotes. */
export function contentEtag(body: Uint8Array): string {
  return `"${createHash('sha256').update(body).digest('hex')}"`;
}

function bare(etag: string): string {
  const unweak = etag.startsWith('W/') ? etag.slice(2) : etag;
  return unweak.length >= 2 && unweak.startsWith('"') && unweak.endsWith('"') ? unweak.slice(1, -1) : unweak;
}

/** True when two etags name the same version; quotes are ignored, as S3 does for If-Match. */
export function sameEtag(a: string, b: string): boolean {
  return bare(a) === bare(b);
}
