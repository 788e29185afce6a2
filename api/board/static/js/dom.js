// Element builders: attributes as an object, children as nodes or strings.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(element, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of [].concat(children ?? [])) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

export function h(tag, attrs, children) {
  return build(document.createElement(tag), attrs, children);
}

export function s(tag, attrs, children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}
