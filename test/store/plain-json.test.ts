import { describe, expect, it } from 'vitest';
import { cloneJson, copyPlainJson } from '../../store/plain-json.ts';

describe('copyPlainJson', () => {
  it('copies plain JSON, dropping undefined properties and keeping key order', () => {
    const value = { b: 1, a: [true, null, 'x', { c: -0 }], skipped: undefined };
    const copy = copyPlainJson(value);
    expect(copy).toEqual({ ok: true, value: { b: 1, a: [true, null, 'x', { c: 0 }] } });
    expect(JSON.stringify(copy.ok && copy.value)).toBe('{"b":1,"a":[true,null,"x",{"c":0}]}');
  });

  it.each([
    ['a Map', { m: new Map() }, '$.m', 'is a Map, not plain JSON'],
    ['Infinity', { n: [1, Number.POSITIVE_INFINITY] }, '$.n[1]', 'is Infinity, not plain JSON'],
    ['a bigint', { n: 1n }, '$.n', 'is a bigint, not plain JSON'],
    ['a symbol', { s: Symbol('x') }, '$.s', 'is a symbol, not plain JSON'],
    [
      'a hole',
      { list: Object.assign(new Array(3), { 0: 1, 2: 3 }) },
      '$.list[1]',
      'is undefined (JSON would turn it into null)',
    ],
  ])('refuses %s, saying where', (_name, value, path, problem) => {
    expect(copyPlainJson(value)).toEqual({ ok: false, path, problem });
  });

  it('refuses a cycle but accepts the same object twice side by side', () => {
    const shared = { x: 1 };
    expect(copyPlainJson({ left: shared, right: shared })).toEqual({
      ok: true,
      value: { left: { x: 1 }, right: { x: 1 } },
    });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(copyPlainJson(cyclic)).toEqual({
      ok: false,
      path: '$.self',
      problem: 'is a circular reference',
    });
  });

  it('keeps a "__proto__" key as data', () => {
    const parsed = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as object;
    const copy = copyPlainJson(parsed);
    expect(copy.ok && JSON.stringify(copy.value)).toBe('{"__proto__":{"polluted":true},"a":1}');
    expect(JSON.stringify(cloneJson(parsed))).toBe('{"__proto__":{"polluted":true},"a":1}');
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});
