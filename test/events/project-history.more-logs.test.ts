import { describe, expect, it } from 'vitest';
import type { ModelMessage } from '../../events/messages.ts';
import { compactionSummaryHeader, projectHistory } from '../../events/project-history.ts';
import { loadSampleLog } from './sample-logs.ts';

const summaryOf = (summary: string): ModelMessage => ({
  role: 'user',
  content: `${compactionSummaryHeader}\n\n${summary}`,
});

describe('projectHistory on the compaction, interrupted, retry and stop logs', () => {
  it('projects compaction to the latest summary, then what follows it; the failed step leaves nothing', () => {
    expect(projectHistory(loadSampleLog('compaction'), { provider: 'openai.responses' })).toEqual([
      summaryOf(
        'The user asked how src/tokenizer.ts splits input (one global regular expression, each match mapped to a token) and for a faster approach: scan the source once with a hand-written state machine.',
      ),
      { role: 'user', content: 'Write that as a patch.' },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: '--- a/src/tokenizer.ts\n+++ b/src/tokenizer.ts\n@@ -1,5 +1,5 @@\n-export function tokenize(source: string): Token[] {\n+export function tokenize(source: string): Token[] { // single pass',
          },
        ],
      },
    ]);
  });

  it('projects the compaction log before its first compaction in full, with the empty-content tool step', () => {
    const facts = loadSampleLog('compaction').filter((fact) => fact.seq <= 11);
    expect(projectHistory(facts, { provider: 'openai.responses' })).toEqual([
      { role: 'user', content: 'Read src/tokenizer.ts and explain how it splits input.' },
      {
        role: 'assistant',
        content: [
          {
            type: 'tool-call',
            callId: 'call_v32opZorIWps84X3rOdc0HlD',
            name: 'readFile',
            input: { path: 'src/tokenizer.ts' },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            callId: 'call_v32opZorIWps84X3rOdc0HlD',
            name: 'readFile',
            text: 'export function tokenize(source: string): Token[] {\n  const tokens: Token[] = [];\n  for (const match of source.matchAll(pattern)) tokens.push(toToken(match));\n  return tokens;\n}\n[… truncated: 18,412 more characters]',
            isError: false,
          },
        ],
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'tokenize() runs one global regular expression over the source and turns each match into a token.',
          },
        ],
      },
      { role: 'user', content: 'Suggest a faster approach.' },
    ]);
  });

  it('projects the compaction log after its first compaction to that summary and run 2', () => {
    const facts = loadSampleLog('compaction').filter((fact) => fact.seq <= 15);
    expect(projectHistory(facts, { provider: 'openai.responses' })).toEqual([
      summaryOf(
        'The user asked how src/tokenizer.ts splits input. It runs one global regular expression over the source (matchAll) and maps each match to a token.',
      ),
      { role: 'user', content: 'Suggest a faster approach.' },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'Scan the source once with a hand-written state machine instead of a global regular expression.',
          },
        ],
      },
    ]);
  });

  it('leaves both unsettled calls of interrupted-tool out and keeps the step’s text', () => {
    expect(
      projectHistory(loadSampleLog('interrupted-tool'), { provider: 'anthropic.messages' }),
    ).toStrictEqual([
      {
        role: 'user',
        content: 'Post the release note to the team channel and to the changelog feed.',
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Posting to both.' }] },
    ]);
  });

  it('shows the resolved indeterminate call of recovered-tool with its unknown result', () => {
    expect(
      projectHistory(loadSampleLog('recovered-tool'), { provider: 'anthropic.messages' }),
    ).toStrictEqual([
      {
        role: 'user',
        content: 'Post the release note to the team channel and to the changelog feed.',
      },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Posting to both.' },
          {
            type: 'tool-call',
            callId: 'toolu_01G0Emxmyu3VCvncpMTqmLmc',
            name: 'httpPost',
            input: {
              url: 'https://chat.example.com/hooks/team',
              body: { text: 'turnlog 0.1.0 is out' },
            },
          },
          {
            type: 'tool-call',
            callId: 'toolu_01JOdkjiHKAM2TwlXQqeSeCI',
            name: 'httpPost',
            input: { url: 'https://feeds.example.com/changelog', body: { version: '0.1.0' } },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            callId: 'toolu_01G0Emxmyu3VCvncpMTqmLmc',
            name: 'httpPost',
            text: 'The outcome of this call is unknown: the process stopped while it was running. Check whether it took effect before you retry it.',
            isError: true,
          },
          {
            type: 'tool-result',
            callId: 'toolu_01JOdkjiHKAM2TwlXQqeSeCI',
            name: 'httpPost',
            text: 'HTTP 200 OK',
            isError: false,
          },
        ],
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'The changelog feed accepted the note (HTTP 200). The team-channel post may or may not have gone out; please check the channel before I post again.',
          },
        ],
      },
    ]);
  });

  it('projects retry-429 to the completed attempt only', () => {
    expect(
      projectHistory(loadSampleLog('retry-429'), { provider: 'openai.responses' }),
    ).toStrictEqual([
      { role: 'user', content: 'Give me a one-line description for package.json.' },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'Durable LLM agent turns: an XState machine over an append-only event log.',
          },
        ],
      },
    ]);
  });

  it('projects stop with the cancelled call as an error result', () => {
    expect(projectHistory(loadSampleLog('stop'), { provider: 'anthropic.messages' })).toStrictEqual(
      [
        { role: 'user', content: 'Reindex the whole workspace.' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Starting the reindex; it can take a few minutes.' },
            {
              type: 'tool-call',
              callId: 'toolu_01eEKWjBStxELyOkO8eSae04',
              name: 'reindex',
              input: { scope: 'all' },
            },
          ],
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              callId: 'toolu_01eEKWjBStxELyOkO8eSae04',
              name: 'reindex',
              text: 'The call was cancelled because the run was stopped (user pressed stop).',
              isError: true,
            },
          ],
        },
      ],
    );
  });
});

describe('the indeterminate call of recovered-tool', () => {
  const facts = loadSampleLog('recovered-tool');
  const upTo = (seq: number) =>
    projectHistory(
      facts.filter((fact) => fact.seq <= seq),
      { provider: 'anthropic.messages' },
    );
  const firstCall = 'toolu_01G0Emxmyu3VCvncpMTqmLmc';

  it('is absent while started, marked indeterminate, recovered and decided but not settled', () => {
    for (const seq of [6, 7, 8, 9]) {
      expect(upTo(seq)).toStrictEqual([
        {
          role: 'user',
          content: 'Post the release note to the team channel and to the changelog feed.',
        },
        { role: 'assistant', content: [{ type: 'text', text: 'Posting to both.' }] },
      ]);
    }
  });

  it('appears with its unknown result once settled, while its unsettled sibling stays out', () => {
    expect(upTo(10).slice(1)).toStrictEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Posting to both.' },
          {
            type: 'tool-call',
            callId: firstCall,
            name: 'httpPost',
            input: {
              url: 'https://chat.example.com/hooks/team',
              body: { text: 'turnlog 0.1.0 is out' },
            },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            callId: firstCall,
            name: 'httpPost',
            text: 'The outcome of this call is unknown: the process stopped while it was running. Check whether it took effect before you retry it.',
            isError: true,
          },
        ],
      },
    ]);
  });
});
