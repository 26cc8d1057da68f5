/** What a response needs of Express's to set headers. */
export interface HeaderSink {
  setHeader(name: string, value: string): void;
}

/**
 * The page's own script and stylesheet only: no inline script, no other origin, so that text which
 * slipped into the markup still could not run. `data:` images are for the page's empty favicon.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Headers of every file of the page: its type, no sniffing, no framing, no stale copy after a restart. */
export function setPageHeaders(response: HeaderSink, type: string): void {
  response.setHeader('Content-Type', type);
  response.setHeader('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  response.setHeader('X-Content-Type-Options', 'nosniff');
  response.setHeader('Cache-Control', 'no-cache');
}
