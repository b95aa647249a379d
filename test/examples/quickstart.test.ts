import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { linesOf, runExample, tempDir } from './example-process.ts';

it('runs the quickstart offline: streamed answer, the tool call, and the 9 facts in .turnlog/', async () => {
  // No TURNLOG_DIR: the default store location, .turnlog/ in the working directory.
  const cwd = tempDir();
  const run = await runExample('quickstart', { cwd });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  expect(linesOf(run.stdout)).toEqual([
    'model: scripted (offline; set OPENAI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY for a real model)',
    'you: What is the weather in Paris?',
    'Let me check.',
    '→ getWeather {"city":"Paris"}',
    '← Paris: 18 °C, sunny, light wind',
    'It is 18 °C and sunny in Paris: a good day for a walk.',
    'completed (end_turn) in 2 steps. The log:',
    '  1  run.started               projecting',
    '  2  step.started              requesting.streaming',
    '  3  step.completed            settlingTools.deciding',
    '  4  tool.permission.decided   settlingTools.running',
    '  5  tool.started              settlingTools.running',
    '  6  tool.settled              projecting',
    '  7  step.started              requesting.streaming',
    '  8  step.completed            terminal',
    '  9  run.ended                 terminal',
    '',
  ]);
  const sessions = readdirSync(path.join(cwd, '.turnlog', 'sessions'));
  expect(sessions).toHaveLength(1);
  expect(sessions[0]).toMatch(/^quickstart-\d+$/);
  expect(existsSync(path.join(cwd, '.turnlog', 'turnlog.lock'))).toBe(false);
});

it('puts the quickstart log under TURNLOG_DIR when it is set', async () => {
  const cwd = tempDir();
  const dir = path.join(tempDir(), 'elsewhere');
  const run = await runExample('quickstart', { cwd, env: { TURNLOG_DIR: dir } });
  expect(run.code).toBe(0);
  expect(readdirSync(path.join(dir, 'sessions'))).toHaveLength(1);
  expect(existsSync(path.join(cwd, '.turnlog'))).toBe(false);
});
