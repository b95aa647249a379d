import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sum } from './sum.js';

test('sum adds every number', () => {
  assert.equal(sum([1, 2, 3]), 6);
});

test('sum of nothing is 0', () => {
  assert.equal(sum([]), 0);
});
