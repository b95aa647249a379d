import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isSessionFolderName,
  sessionFolderName,
  sessionIdOfFolder,
} from '../../../store/folder/session-files.ts';

describe('session folder names', () => {
  it('keeps lowercase ids readable and escapes everything else', () => {
    expect(sessionFolderName('session_1-a')).toBe('session_1-a');
    expect(sessionFolderName('A/b.c')).toBe('~41~2Fb~2Ec');
    expect(sessionFolderName('..')).toBe('~2E~2E');
    expect(sessionFolderName('é')).toBe('~C3~A9');
  });

  it('round-trips any id that fits and hashes the rest, with only safe characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), (sessionId) => {
        const name = sessionFolderName(sessionId);
        expect(isSessionFolderName(name)).toBe(true);
        // 40 four-byte graphemes encode to 480 characters: past 200, the name is a hash.
        if (Buffer.byteLength(sessionId) * 3 > 200 && name.startsWith('~h')) {
          expect(name).toMatch(/^~h[0-9a-f]{64}$/);
          expect(sessionIdOfFolder(name)).toBeUndefined();
          return;
        }
        expect(name).toMatch(/^([a-z0-9_-]|~[0-9A-F]{2})+$/);
        expect(sessionIdOfFolder(name)).toBe(sessionId);
      }),
    );
  });

  it('gives ids that differ only in case names that differ on a case-insensitive file system', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 20 }),
        fc.string({ minLength: 1, maxLength: 20 }),
        (left, right) => {
          fc.pre(left !== right);
          expect(sessionFolderName(left).toLowerCase()).not.toBe(
            sessionFolderName(right).toLowerCase(),
          );
        },
      ),
    );
    expect(sessionFolderName('Ab').toLowerCase()).not.toBe(sessionFolderName('aB').toLowerCase());
  });

  it('hashes an id whose name would pass 200 characters, and does not decode the hash', () => {
    const name = sessionFolderName('Z'.repeat(67));
    expect(name).toMatch(/^~h[0-9a-f]{64}$/);
    expect(sessionIdOfFolder(name)).toBeUndefined();
    expect(isSessionFolderName(name)).toBe(true);
    expect(sessionFolderName('Z'.repeat(66))).toHaveLength(198);
  });

  it('does not take staging folders or other names for sessions', () => {
    expect(isSessionFolderName('.new-4242-1')).toBe(false);
    expect(isSessionFolderName('~zz')).toBe(false);
  });
});
