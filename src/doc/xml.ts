// Owns XML text <-> Yjs XML types for CRDT stores of type "xml": a small strict parser and an escaping serializer.
import * as Y from 'yjs';
import { MAX_XML_DEPTH } from '../limits.js';

export type XmlNode =
  | { readonly kind: 'element'; readonly name: string; readonly attributes: ReadonlyArray<readonly [string, string]>; readonly children: XmlNode[] }
  | { readonly kind: 'text'; readonly text: string };

export type ParseResult = { readonly ok: true; readonly nodes: XmlNode[] } | { readonly ok: false; readonly error: string };

const NAME = /^[A-Za-z_:][\w.:-]*/;
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, body: string) => {
    if (body.startsWith('#x')) return safeCodePoint(Number.parseInt(body.slice(2), 16)) ?? whole;
    if (body.startsWith('#')) return safeCodePoint(Number.parseInt(body.slice(1), 10)) ?? whole;
    return Object.hasOwn(ENTITIES, body) ? (ENTITIES[body] as string) : whole;
  });
}

function safeCodePoint(code: number): string | undefined {
  return Number.isInteger(code) && code >= 0 && code <= 0x10ffff ? String.fromCodePoint(code) : undefined;
}

/** Parses an XML fragment (several top-level nodes allowed); comments, processing instructions and doctypes are dropped. */
export function parseXml(source: string): ParseResult {
  const root: XmlNode[] = [];
  const stack: Array<{ name: string; children: XmlNode[] }> = [];
  const children = (): XmlNode[] => stack[stack.length - 1]?.children ?? root;
  let pos = 0;
  while (pos < source.length) {
    const lt = source.indexOf('<', pos);
    if (lt !== pos) {
      const end = lt === -1 ? source.length : lt;
      children().push({ kind: 'text', text: decodeEntities(source.slice(pos, end)) });
      pos = end;
      continue;
    }
    const skipTo = (marker: string, what: string): string | undefined => {
      const end = source.indexOf(marker, pos);
      if (end === -1) return `unterminated ${what} at offset ${pos}`;
      pos = end + marker.length;
      return undefined;
    };
    let error: string | undefined;
    if (source.startsWith('<!--', pos)) error = skipTo('-->', 'comment');
    else if (source.startsWith('<![CDATA[', pos)) {
      const end = source.indexOf(']]>', pos);
      if (end === -1) return { ok: false, error: `unterminated CDATA section at offset ${pos}` };
      children().push({ kind: 'text', text: source.slice(pos + 9, end) });
      pos = end + 3;
    } else if (source.startsWith('<?', pos)) error = skipTo('?>', 'processing instruction');
    else if (source.startsWith('<!', pos)) error = skipTo('>', 'declaration');
    else if (source.startsWith('</', pos)) {
      const name = NAME.exec(source.slice(pos + 2))?.[0];
      const open = stack.pop();
      if (name === undefined || open === undefined || open.name !== name) return { ok: false, error: `unexpected closing tag at offset ${pos}` };
      pos += 2 + name.length;
      while (/\s/.test(source[pos] ?? '')) pos++;
      if (source[pos] !== '>') return { ok: false, error: `malformed closing tag </${name}> at offset ${pos}` };
      pos++;
    } else {
      const tag = readStartTag(source, pos);
      if (!tag.ok) return tag;
      const element: XmlNode = { kind: 'element', name: tag.name, attributes: tag.attributes, children: [] };
      children().push(element);
      if (!tag.selfClosing) {
        // Yjs and the serializer walk the tree recursively: a deeper one would overflow the stack.
        if (stack.length >= MAX_XML_DEPTH) return { ok: false, error: `elements are nested more than ${MAX_XML_DEPTH} levels deep at offset ${pos}` };
        stack.push({ name: tag.name, children: element.children });
      }
      pos = tag.end;
    }
    if (error !== undefined) return { ok: false, error };
  }
  const unclosed = stack.pop();
  return unclosed === undefined ? { ok: true, nodes: root } : { ok: false, error: `element <${unclosed.name}> is not closed` };
}

type StartTag =
  | { ok: true; name: string; attributes: Array<[string, string]>; selfClosing: boolean; end: number }
  | { ok: false; error: string };

function readStartTag(source: string, start: number): StartTag {
  const name = NAME.exec(source.slice(start + 1))?.[0];
  if (name === undefined) return { ok: false, error: `expected an element name at offset ${start}` };
  let pos = start + 1 + name.length;
  const attributes: Array<[string, string]> = [];
  for (;;) {
    while (/\s/.test(source[pos] ?? '')) pos++;
    if (source.startsWith('/>', pos)) return { ok: true, name, attributes, selfClosing: true, end: pos + 2 };
    if (source[pos] === '>') return { ok: true, name, attributes, selfClosing: false, end: pos + 1 };
    const attribute = NAME.exec(source.slice(pos))?.[0];
    if (attribute === undefined) return { ok: false, error: `malformed attribute in <${name}> at offset ${pos}` };
    pos += attribute.length;
    while (/\s/.test(source[pos] ?? '')) pos++;
    if (source[pos] !== '=') {
      attributes.push([attribute, '']);
      continue;
    }
    pos++;
    while (/\s/.test(source[pos] ?? '')) pos++;
    const quote = source[pos];
    const close = quote === '"' || quote === "'" ? source.indexOf(quote, pos + 1) : -1;
    if (close === -1) return { ok: false, error: `attribute ${attribute} of <${name}> needs a quoted value` };
    attributes.push([attribute, decodeEntities(source.slice(pos + 1, close))]);
    pos = close + 1;
  }
}

/** Builds Yjs XML types (not yet integrated: Yjs keeps their content until they are inserted into a document). */
export function toYXml(nodes: readonly XmlNode[]): Array<Y.XmlElement | Y.XmlText> {
  return nodes.map((node) => {
    if (node.kind === 'text') return new Y.XmlText(node.text);
    const element = new Y.XmlElement(node.name);
    for (const [key, value] of node.attributes) element.setAttribute(key, value);
    element.insert(0, toYXml(node.children));
    return element;
  });
}

const escapeText = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeAttribute = (text: string): string => escapeText(text).replace(/"/g, '&quot;');

function attributesText(attributes: Record<string, unknown>): string {
  return Object.keys(attributes)
    .sort()
    .map((key) => {
      const value = attributes[key];
      return ` ${key}="${escapeAttribute(typeof value === 'string' ? value : JSON.stringify(value))}"`;
    })
    .join('');
}

/** Serializes like Yjs' own toString (formatting marks become tags), but escapes text and attribute values. */
export function serializeXml(node: Y.XmlFragment | Y.XmlElement | Y.XmlText | Y.XmlHook): string {
  if (node instanceof Y.XmlText) {
    const delta = node.toDelta() as Array<{ insert: unknown; attributes?: Record<string, unknown> }>;
    return delta
      .map(({ insert, attributes = {} }) => {
        const marks = Object.keys(attributes).sort();
        const open = marks
          .map((mark) => {
            const value = attributes[mark];
            return `<${mark}${typeof value === 'object' && value !== null ? attributesText(value as Record<string, unknown>) : ''}>`;
          })
          .join('');
        const close = [...marks].reverse().map((mark) => `</${mark}>`).join('');
        return `${open}${typeof insert === 'string' ? escapeText(insert) : ''}${close}`;
      })
      .join('');
  }
  // Hooks are application-defined embeds with no XML form.
  if (node instanceof Y.XmlHook) return '';
  const inner = node.toArray().map((child) => serializeXml(child)).join('');
  if (node instanceof Y.XmlElement) return `<${node.nodeName}${attributesText(node.getAttributes())}>${inner}</${node.nodeName}>`;
  return inner;
}
