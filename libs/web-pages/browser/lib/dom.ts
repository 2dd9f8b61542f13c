/// <reference lib="dom" />
/**
 * A few DOM helpers. Every text goes in as a text node (or an attribute set by the DOM), never as markup, so nothing
 * an API answer holds can become script; the one exception is the status page's own escaped renderer.
 */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | undefined | null>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) el.setAttribute(name, '');
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces an element's children. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el as T;
}

/** A table with a header row and one row per item; `empty` is shown in a single cell when there are none. */
export function table(caption: string, heads: string[], rows: Child[][], empty: string): HTMLTableElement {
  return h(
    'table',
    {},
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', {}, h('tr', {}, ...heads.map((t) => h('th', { scope: 'col' }, t)))),
    h(
      'tbody',
      {},
      ...(rows.length
        ? rows.map((r) => h('tr', {}, ...r.map((c, i) => h('td', { 'data-label': heads[i] as string }, c))))
        : [h('tr', {}, h('td', { colspan: heads.length }, empty))]),
    ),
  );
}
