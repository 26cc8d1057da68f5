import type { CountedEntity, CounterRegistry } from './counter.registry.js';

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
  const visit = (node: unknown, depth: number): void => {
    if (typeof node !== 'object' || node === null || depth > MAX_DEPTH || seen.has(node)) return;
    seen.add(node);
    if (Array.isArray(node)) {
      for (const item of node) visit(item, depth + 1);
      return;
    }
    const entity = registry.forInstance(node);
    if (entity) found.push({ entity, instance: node as Record<string, unknown> });
    else if (!isPlainObject(node)) return;
    for (const child of Object.values(node)) visit(child, depth + 1);
  };
  visit(value, 0);
  return found;
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
