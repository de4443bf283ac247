// The page's small helpers, run in Node: what they show for good and bad input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { age, when } from '../../ui/dom.js';

test('dates read as the locale writes them; one formatter each serves every row', () => {
  const now = Date.UTC(2026, 11, 3, 16, 0);
  for (const millis of [0, now - 5 * 86400e3, now]) {
    assert.equal(when(millis), new Date(millis).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }));
  }
  assert.equal(age(now - 5 * 86400e3, now), new Date(now - 5 * 86400e3).toLocaleDateString(undefined, { month: 'short', day: 'numeric' }));
  assert.equal(age(now - 10e3, now), 'just now');
  assert.equal(age(now - 3 * 60e3, now), '3 min ago');
  assert.equal(age(now - 2 * 3600e3, now), '2 h ago');
});

test('a missing or broken time shows nothing rather than "Invalid Date" or an exception', () => {
  for (const bad of [undefined, null, NaN, Infinity, '2026-12-03', 8.64e15 + 1, -1e17]) {
    assert.equal(when(bad), '');
  }
  assert.equal(age(NaN, Date.now()), '');
  assert.equal(age(-1e17, Date.now()), '');
});
