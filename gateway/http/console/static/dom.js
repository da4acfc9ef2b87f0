// Elements are built node by node, never from markup strings: results and schemas are data from elsewhere.

export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") element.className = value;
    else if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name in element && typeof value !== "string") element[name] = value;
    else element.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

let counter = 0;
export function uniqueId(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}

export function pretty(value) {
  return JSON.stringify(value, null, 2);
}
