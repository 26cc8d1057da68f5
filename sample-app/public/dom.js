// Small DOM helpers of the page. Whatever users typed reaches the DOM only as text nodes (append,
// textContent), never as markup.

const SVG = 'http://www.w3.org/2000/svg';

/** An element with attributes, listeners (`on…`) and children; strings become text nodes. */
export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  node.append(...children.flat().filter((child) => child !== null && child !== undefined));
  return node;
}

/** An SVG element with attributes and children. */
export function s(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  node.append(...children);
  return node;
}

/** Sets a node's text; when it changes, and `flash` is set, the node lights up briefly. */
export function setText(node, text, flash = false) {
  if (node.textContent === text) return;
  node.textContent = text;
  if (flash) lightUp(node);
}

export function lightUp(node) {
  node.animate([{ backgroundColor: '#ffd33d' }, { backgroundColor: 'transparent' }], { duration: 1500 });
}

/** 1234 → "1,234". */
export const number = (n) => n.toLocaleString('en-US');

/** "1 comment", "2 comments": the noun for `n`; `many` defaults to `one` + "s". */
export const noun = (n, one, many = `${one}s`) => (n === 1 ? one : many);

/** "+2", "0", "−3". */
export const signed = (n) => (n > 0 ? `+${number(n)}` : n < 0 ? `−${number(-n)}` : '0');

/** An ISO time as "12:43:51", local. */
export const clock = (iso) => new Date(iso).toLocaleTimeString('en-GB', { hour12: false });

export const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
