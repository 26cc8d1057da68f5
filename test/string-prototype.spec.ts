import { describe, expect, it } from 'vitest';
import { startCounterApp } from './support/counter-app.js';
import { createTestDatabase } from './support/databases.js';
import { deleteKeys, uniquePrefix } from './support/redis.js';
import { inspectionClient } from './support/topologies.js';

/** V8's own answer (the workers run with --allow-natives-syntax, see vitest.config.ts). */
const hasFastProperties = new Function('object', 'return %HasFastProperties(object)') as (object: object) => boolean;

// ioredis 6 declares `class VerbatimString extends String` when it loads, which leaves String.prototype
// in V8's dictionary mode: every string method of the process then leaves its fast path (see
// fast-string-prototype.ts). The module puts it back when its Redis layer starts. Once back, it stays
// fast in this process whatever is declared later, so there is one check per worker.
describe('String.prototype in V8', () => {
  it('is in fast mode once an application with the module has started, after a String subclass left it slow', async () => {
    class Subclass extends String {}
    void Subclass;
    expect(hasFastProperties(String.prototype)).toBe(false);
    const database = await createTestDatabase('sqlite');
    const keyPrefix = uniquePrefix('string-prototype');
    const app = await startCounterApp({ database: database.options, keyPrefix });
    const redis = inspectionClient('standalone');
    try {
      expect(hasFastProperties(String.prototype)).toBe(true);
    } finally {
      await app.close();
      await database.drop();
      await deleteKeys(redis, keyPrefix);
      redis.disconnect();
    }
  });
});
