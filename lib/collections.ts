/** Items by key, in first-seen order of the keys and of the items within each group. */
export function groupBy<K, T>(items: readonly T[], keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

/** `items` cut into runs of at most `size`. */
export function chunks<T>(items: T[], size: number): T[][] {
  const runs: T[][] = [];
  for (let at = 0; at < items.length; at += size) runs.push(items.slice(at, at + size));
  return runs;
}

/** Per request, its result: `results[g]` holds those of `groups[g]`, groups made of `requests`' items. */
export function inRequestOrder<R, T>(requests: readonly R[], groups: R[][], results: T[][]): T[] {
  const resultOf = new Map<R, T>();
  groups.forEach((group, g) => group.forEach((request, r) => resultOf.set(request, results[g][r])));
  return requests.map((request) => resultOf.get(request) as T);
}
