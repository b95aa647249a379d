import { describe, expect, it } from 'vitest';
import {
  errorMessage,
  formatToolOutput,
  isPlainJson,
  maxStoredOutputChars,
  redactSecrets,
  truncateText,
  truncationMarker,
} from '../../tools/tool-output.ts';

describe('formatToolOutput', () => {
  it('shows a string as it is and keeps it as output', () => {
    expect(formatToolOutput({ value: 'line 1\nline 2', maxChars: 100 })).toEqual({
      text: 'line 1\nline 2',
      truncated: false,
      output: 'line 1\nline 2',
    });
  });

  it('shows objects and arrays as JSON and keeps the JSON value', () => {
    expect(formatToolOutput({ value: { a: [1, 'two', null] }, maxChars: 100 })).toEqual({
      text: '{"a":[1,"two",null]}',
      truncated: false,
      output: { a: [1, 'two', null] },
    });
  });

  it('shows undefined as "(no output)" and keeps no output', () => {
    expect(formatToolOutput({ value: undefined, maxChars: 100 })).toEqual({
      text: '(no output)',
      truncated: false,
    });
  });

  it('shows a value that is not plain JSON but keeps no output', () => {
    const when = new Date(Date.UTC(2026, 0, 2));
    expect(formatToolOutput({ value: { when }, maxChars: 100 })).toEqual({
      text: '{"when":"2026-01-02T00:00:00.000Z"}',
      truncated: false,
    });
    expect(formatToolOutput({ value: 12n, maxChars: 100 })).toEqual({
      text: '12',
      truncated: false,
    });
  });

  it('keeps no output when its JSON is larger than the bound', () => {
    const value = { data: 'x'.repeat(maxStoredOutputChars) };
    const result = formatToolOutput({ value, maxChars: 100_000 });
    expect(result.output).toBeUndefined();
    expect(result.text).toBe(JSON.stringify(value));
  });

  it('redacts secrets from the text and then keeps no output', () => {
    const result = formatToolOutput({
      value: { token: 'sk-live-123', ok: true },
      maxChars: 100,
      secrets: ['sk-live-123'],
    });
    expect(result).toEqual({ text: '{"token":"[redacted]","ok":true}', truncated: false });
  });

  it('truncates the text to maxChars with a marker', () => {
    const result = formatToolOutput({ value: 'a'.repeat(5_000), maxChars: 1_000 });
    expect(result.truncated).toBe(true);
    expect(result.text.length).toBeLessThanOrEqual(1_000);
    expect(result.text).toContain('characters cut here. Do not re-run commands with side effects');
  });
});

describe('truncateText', () => {
  it('leaves text within the limit alone', () => {
    expect(truncateText('abc', 3)).toEqual({ text: 'abc', truncated: false });
  });

  it('keeps head and tail, says exactly how many characters were cut, and fits the limit', () => {
    const text = `${'h'.repeat(600)}${'m'.repeat(10_000)}${'t'.repeat(400)}`;
    const { text: cut, truncated } = truncateText(text, 1_000);
    expect(truncated).toBe(true);
    expect(cut.length).toBeLessThanOrEqual(1_000);
    const match = /\n\[… (\d+) characters cut here\./.exec(cut);
    expect(match).not.toBeNull();
    const cutCount = Number(match?.[1]);
    const marker = truncationMarker(cutCount);
    const markerAt = cut.indexOf(marker);
    const head = cut.slice(0, markerAt);
    const tail = cut.slice(markerAt + marker.length);
    expect(head.length + cutCount + tail.length).toBe(text.length);
    expect(text.startsWith(head)).toBe(true);
    expect(text.endsWith(tail)).toBe(true);
    expect(head.startsWith('hhhh')).toBe(true);
    expect(tail.endsWith('tttt')).toBe(true);
  });

  it('never splits a surrogate pair', () => {
    const text = '😀'.repeat(2_000);
    const { text: cut } = truncateText(text, 501);
    const kept = cut.replace(/\n\[…[^\]]*\]\n/, '');
    expect(kept).toMatch(/^(😀)*$/u);
  });
});

describe('redactSecrets', () => {
  it('replaces every occurrence, longest secret first, and ignores empty strings', () => {
    expect(redactSecrets('key=abc123, again abc123, prefix abc', ['abc', 'abc123', ''])).toBe(
      'key=[redacted], again [redacted], prefix [redacted]',
    );
  });
});

describe('errorMessage', () => {
  it('reads Error messages, strings and other values', () => {
    expect(errorMessage(new TypeError('bad type'))).toBe('bad type');
    expect(errorMessage('plain')).toBe('plain');
    expect(errorMessage({ code: 42 })).toBe('{"code":42}');
    expect(errorMessage(undefined)).toBe('undefined');
  });
});

describe('isPlainJson', () => {
  it('accepts plain JSON and refuses everything JSON would change', () => {
    expect(isPlainJson({ a: [1, 'x', true, null, { b: -2.5 }] })).toBe(true);
    expect(isPlainJson({ a: undefined })).toBe(false);
    expect(isPlainJson([Number.NaN])).toBe(false);
    expect(isPlainJson(new Date(0))).toBe(false);
    expect(isPlainJson(new Map())).toBe(false);
    expect(isPlainJson(() => 1)).toBe(false);
  });
});

describe('values that fight back', () => {
  it('formats a value whose getters throw without throwing', () => {
    const hostile = {
      get boom(): string {
        throw new Error('getter exploded');
      },
    };
    expect(formatToolOutput({ value: hostile, maxChars: 100 })).toEqual({
      text: '[object Object]',
      truncated: false,
    });
    const bare = Object.create(null) as object;
    Object.defineProperty(bare, 'toJSON', {
      value: () => {
        throw new Error('no');
      },
    });
    expect(formatToolOutput({ value: bare, maxChars: 100 })).toEqual({
      text: '(a value of type object that cannot be shown as text)',
      truncated: false,
    });
  });
});
