import type { CounterRegistry } from './counter.registry.js';
import type { CountedEntity } from './model/counted-entity.js';

export interface CountedInstance {
  entity: CountedEntity;
  instance: Record<string, unknown>;
}

const MAX_DEPTH = 32;

/**
 * Finds every counted entity in a value: the value itself, array items, properties of plain objects
 * (pagination wrappers) and of entities (relations). Other class instances (dates, buffers, streams)
 * are not entered.
 */
export function collectCountedInstances(value: unknown, registry: CounterRegistry): CountedInstance[] {
  const found: CountedInstance[] = [];
  const seen = new Set<object>();
  // Only objects are visited: an entity's many number and string properties are passed over here.
  const visit = (node: object, depth: number): void => {
    if (depth > MAX_DEPTH || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const item of node) if (typeof item === 'object' && item !== null) visit(item, depth + 1);
      return;
    }
    const entity = registry.forInstance(node);
    if (entity) found.push({ entity, instance: node as Record<string, unknown> });
    else if (!isPlainObject(node)) return;
    for (const key in node) {
      const child = (node as Record<string, unknown>)[key];
      if (typeof child === 'object' && child !== null && Object.hasOwn(node, key)) visit(child, depth + 1);
    }
  };
  if (typeof value === 'object' && value !== null) visit(value, 0);
  return found;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
