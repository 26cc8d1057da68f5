import { describe, expect, it } from 'vitest';
import { COUNTER_SCRIPTS } from '../../lib/redis/script-commands.js';
import { loadLua } from '../../lib/redis/scripts/lua.loader.js';

// The scripts share Lua pieces through '--@include <piece>' lines, resolved when the scripts are defined.
describe('a Lua include', () => {
  it('is replaced by its piece, whose own includes are resolved, each piece once', () => {
    const lua = loadLua('--@include row-change\n--@include numbers\nreturn exact(1)\n');
    expect(lua).not.toContain('--@include');
    expect(lua.match(/local MAX_SAFE = 9007199254740991/g)).toHaveLength(1);
    expect(lua.match(/local function keep_as_hash_table/g)).toHaveLength(1);
    expect(lua).toMatch(/local function mark_dirty[\s\S]*return exact\(1\)\n$/);
  });

  it('of a piece that does not exist fails at once', () => {
    expect(() => loadLua('--@include nothing\n')).toThrow("No Lua piece is named 'nothing'.");
  });

  it('is resolved in every script the store sends', () => {
    for (const lua of Object.values(COUNTER_SCRIPTS)) {
      expect(lua).not.toMatch(/--@include|\$\{/);
      // Each shared piece at most once per script.
      expect((lua.match(/local MAX_SAFE =/g) ?? []).length).toBeLessThanOrEqual(1);
    }
  });
});
