/**
 * XML as arXiv's Atom feeds use it (elements, attributes, namespaces, entities, comments, the XML
 * declaration; no DTDs, no CDATA), each name resolved to its namespace's URI: arXiv's feeds have
 * moved their prefixes, and a reader that strips them (fast-xml-parser) cannot tell an Atom
 * element from an arXiv one of the same local name. Malformed input is `fail`'s error.
 */

/** What a malformed document throws: the caller says whose document it was. */
type Fail = (message: string) => Error;

export interface XmlElement {
  ns: string;
  local: string;
  attrs: Map<string, string>;
  children: XmlElement[];
  text: string;
}

const XML_NS = "http://www.w3.org/XML/1998/namespace";

const NAMED_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
const NAME = "[A-Za-z_][\\w.:-]*";
const START_TAG = new RegExp(`<(${NAME})((?:\\s+${NAME}\\s*=\\s*(?:"[^"<]*"|'[^'<]*'))*)\\s*(/?)>`, "y");
const ATTRIBUTE = new RegExp(`(${NAME})\\s*=\\s*(?:"([^"<]*)"|'([^'<]*)')`, "g");


function decodeEntities(raw: string, at: number, fail: Fail): string {
  return raw.replace(/&(?:#x([0-9a-fA-F]+)|#([0-9]+)|([A-Za-z]+))?;?/g, (match, hex?: string, dec?: string, name?: string) => {
    if (!match.endsWith(";") || match === "&;") throw fail(`bare "&" near offset ${at}`);
    if (name !== undefined) {
      const named = NAMED_ENTITIES[name];
      if (named === undefined) throw fail(`unknown entity &${name}; near offset ${at}`);
      return named;
    }
    const code = hex !== undefined ? parseInt(hex, 16) : Number(dec);
    if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) || code === 0) throw fail(`invalid character reference ${match} near offset ${at}`);
    return String.fromCodePoint(code);
  });
}

function splitName(qname: string, scope: ReadonlyMap<string, string>, at: number, fail: Fail, attribute = false): { ns: string; local: string } {
  const colon = qname.indexOf(":");
  // Unprefixed attributes belong to no namespace; unprefixed elements to the default one.
  if (colon < 0) return { ns: attribute ? "" : (scope.get("") ?? ""), local: qname };
  const prefix = qname.slice(0, colon);
  const ns = prefix === "xml" ? XML_NS : scope.get(prefix);
  if (ns === undefined) throw fail(`undeclared namespace prefix "${prefix}" near offset ${at}`);
  return { ns, local: qname.slice(colon + 1) };
}

export function parseXml(xml: string, fail: Fail): XmlElement {
  const stack: { el: XmlElement; qname: string; scope: Map<string, string> }[] = [];
  let root: XmlElement | undefined;
  let i = xml.charCodeAt(0) === 0xfeff ? 1 : 0;
  while (i < xml.length) {
    const lt = xml.indexOf("<", i);
    const end = lt < 0 ? xml.length : lt;
    if (end > i) {
      const raw = xml.slice(i, end);
      const top = stack.at(-1);
      if (top) top.el.text += decodeEntities(raw, i, fail);
      else if (raw.trim()) throw fail(`text outside the root element at offset ${i}`);
    }
    if (lt < 0) break;

    if (xml.startsWith("<?", lt) || xml.startsWith("<!--", lt)) {
      const close = xml.startsWith("<?", lt) ? "?>" : "-->";
      const stop = xml.indexOf(close, lt + 2);
      if (stop < 0) throw fail(`unterminated ${close === "?>" ? "processing instruction" : "comment"} at offset ${lt}`);
      i = stop + close.length;
      continue;
    }
    if (xml.startsWith("<!", lt)) throw fail(`unsupported markup (DOCTYPE or CDATA) at offset ${lt}`);

    if (xml.startsWith("</", lt)) {
      const stop = xml.indexOf(">", lt);
      const qname = stop < 0 ? "" : xml.slice(lt + 2, stop).trim();
      const open = stack.pop();
      if (!open || open.qname !== qname) throw fail(`</${qname}> at offset ${lt} does not close ${open ? `<${open.qname}>` : "anything"}`);
      if (!stack.length) root = open.el;
      i = stop + 1;
      continue;
    }

    if (root) throw fail(`content after the root element at offset ${lt}`);
    START_TAG.lastIndex = lt;
    const tag = START_TAG.exec(xml);
    if (!tag) throw fail(`malformed tag at offset ${lt}`);
    const [whole, qname = "", attrText = "", selfClosing] = tag;
    const scope = new Map(stack.at(-1)?.scope);
    const rawAttrs: [string, string][] = [];
    for (const [, name = "", dq, sq] of attrText.matchAll(ATTRIBUTE)) {
      const value = decodeEntities(dq ?? sq ?? "", lt, fail);
      if (name === "xmlns") scope.set("", value);
      else if (name.startsWith("xmlns:")) scope.set(name.slice(6), value);
      else rawAttrs.push([name, value]);
    }
    const attrs = new Map<string, string>();
    for (const [name, value] of rawAttrs) {
      const { ns, local } = splitName(name, scope, lt, fail, true);
      // arXiv's attributes are all unprefixed; a prefixed one is kept under its qualified name so it cannot shadow them.
      const key = ns ? `${ns}#${local}` : local;
      if (attrs.has(key)) throw fail(`duplicate attribute ${name} at offset ${lt}`);
      attrs.set(key, value);
    }
    const el: XmlElement = { ...splitName(qname, scope, lt, fail), attrs, children: [], text: "" };
    stack.at(-1)?.el.children.push(el);
    if (selfClosing) {
      if (!stack.length) root = el;
    } else {
      stack.push({ el, qname, scope });
    }
    i = lt + whole.length;
  }
  const open = stack.at(-1);
  if (open) throw fail(`<${open.qname}> is never closed (truncated response?)`);
  if (!root) throw fail("no root element");
  return root;
}

export function childrenOf(el: XmlElement, ns: string, local: string): XmlElement[] {
  return el.children.filter((c) => c.ns === ns && c.local === local);
}

export function childOf(el: XmlElement, ns: string, local: string): XmlElement | undefined {
  return el.children.find((c) => c.ns === ns && c.local === local);
}
