import { describe, expect, it } from 'vitest';
import { canonicalJson, hashJson } from '../../events/json.ts';

describe('canonicalJson', () => {
  it('sorts object keys at every depth and skips undefined properties', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined, b: null }] })).toBe(
      '{"a":[{"b":null,"d":2}],"b":1}',
    );
  });

  it('keeps a parsed "__proto__" key as data, so inputs that differ by it hash apart', () => {
    const withKey = JSON.parse('{"path":"a.md","__proto__":{"mode":"overwrite"}}') as unknown;
    expect(canonicalJson(withKey)).toBe('{"__proto__":{"mode":"overwrite"},"path":"a.md"}');
    expect(hashJson(withKey)).not.toBe(hashJson({ path: 'a.md' }));
  });
});
