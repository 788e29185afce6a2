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

/** Replace `container`'s content, then focus the new element whose `attribute` has the value
 * of the one that had the focus: a redraw when values arrive must not throw a keyboard user
 * back to the top of the page. */
export function replaceKeepingFocus(container, content, attribute) {
  const focused = container.contains(document.activeElement) ? document.activeElement.closest(`[${attribute}]`) : null;
  const value = focused?.getAttribute(attribute);
  container.replaceChildren(content);
  if (value) container.querySelector(`[${attribute}="${CSS.escape(value)}"]`)?.focus();
}
