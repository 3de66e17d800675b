// Peer text made fit to show a person (Go's lockstep.Printable): a player's forensics
// answers, heal refusals and failure messages reach every page and CLI, and a line break or
// a terminal escape in them must never pass for the relay's own words.

const GRAPHIC = /^[\p{L}\p{M}\p{N}\p{P}\p{S} \u00a0]$/u;
const SHORT: Record<number, string> = { 7: "\\a", 8: "\\b", 9: "\\t", 10: "\\n", 11: "\\v", 12: "\\f", 13: "\\r" };

/**
 * s as one line of printable text: every code point that is not graphic (a line break, an
 * escape, a bidirectional override, a zero-width character) becomes its Go escape (\n,
 * \x1b, \u202e), a lone surrogate U+FFFD. Idempotent, and the same as the relay's.
 */
export function printable(s: string): string {
  let out = "";
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0xd800 && cp <= 0xdfff) out += "\ufffd";
    else if (GRAPHIC.test(ch)) out += ch;
    else out += SHORT[cp] ?? (cp < 0x80 ? `\\x${hex(cp, 2)}` : cp < 0x10000 ? `\\u${hex(cp, 4)}` : `\\U${hex(cp, 8)}`);
  }
  return out;
}

const hex = (n: number, w: number) => n.toString(16).padStart(w, "0");
