/** A surrogate code unit without its pair: in Unicode mode a regex reads pairs as one code point. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Where `text` holds a lone surrogate (a UTF-16 code unit that is half of a character), or -1. Sent as
 * UTF-8 (to Redis, to a database) such a unit becomes U+FFFD, so texts that differ would arrive alike.
 */
export function loneSurrogateAt(text: string): number {
  return text.search(LONE_SURROGATE);
}
