import { describe, expect, it } from 'vitest';
import { projectHistory } from '../../events/project-history.ts';
import { loadSampleLog } from './sample-logs.ts';

describe('projectHistory on the sample logs', () => {
  it('projects text-only to one user and one assistant message per run', () => {
    expect(projectHistory(loadSampleLog('text-only'), { provider: 'anthropic.messages' })).toEqual([
      { role: 'user', content: 'What does the turnlog package do, in one sentence?' },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'turnlog runs LLM agent turns as an XState machine and writes every transition to a durable event log.',
          },
        ],
      },
      { role: 'user', content: 'And what does it write to disk?' },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'Only the event log: one JSON document per session under .turnlog/, split into segments, each written to a temp file, fsynced and renamed into place.',
          },
        ],
      },
    ]);
  });

  it('projects multi-tool to assistant [reasoning, text, call, call] then results in call order with the error text', () => {
    const messages = projectHistory(loadSampleLog('multi-tool'), { provider: 'openai.responses' });
    expect(messages).toStrictEqual([
      {
        role: 'user',
        content: 'Summarize the install guide in docs/ and tell me what else is in there.',
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'reasoning',
            text: 'The user wants the install guide summarized and the rest of docs/ listed. List docs/ and read docs/install.md in parallel.',
            providerOptions: {
              openai: {
                itemId: 'rs_064e7f787ad27d153053788baf2bd11d2829fcce32cb2547',
                reasoningEncryptedContent:
                  'gAAAAABpfbynfLgfHQXiFoHgxMJIzybTuBVYr2OpU2CDRu7DATCc2weyrjvfLTauB0O8MhZ7',
              },
            },
          },
          {
            type: 'text',
            text: "I'll list docs/ and read the install guide.",
            providerOptions: {
              openai: { itemId: 'msg_7858541571e587a737c3a4baee3d8e790e98a8889d60c540' },
            },
          },
          {
            type: 'tool-call',
            callId: 'call_BAQfNK0SDCrgVqbop1Srpwbx',
            name: 'listFiles',
            input: { path: 'docs' },
            providerOptions: {
              openai: { itemId: 'fc_4d350e93631f33ad74834ee5bc64d8d4a5aa74deee708e0e' },
            },
          },
          {
            type: 'tool-call',
            callId: 'call_bJbCYm4CXOhcShxV8YqAPSaF',
            name: 'readFile',
            input: { path: 'docs/install.md' },
            providerOptions: {
              openai: { itemId: 'fc_c3c9ceaa461b4ad96ca23d7d043786dbb694184bf7780dc1' },
            },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            callId: 'call_BAQfNK0SDCrgVqbop1Srpwbx',
            name: 'listFiles',
            text: 'guide.md\nsetup.md\ntroubleshooting.md',
            isError: false,
          },
          {
            type: 'tool-result',
            callId: 'call_bJbCYm4CXOhcShxV8YqAPSaF',
            name: 'readFile',
            text: "ENOENT: no such file or directory, open 'docs/install.md'",
            isError: true,
          },
        ],
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'There is no docs/install.md. docs/ holds guide.md, setup.md and troubleshooting.md; the install steps are most likely in setup.md. Shall I summarize that one?',
            providerOptions: {
              openai: { itemId: 'msg_949e11b8e63d17c2b0bfe45756cd53a4f0e2449c0252aac2' },
            },
          },
        ],
      },
    ]);
  });

  it('drops reasoning and every provider option of multi-tool when replaying to another provider', () => {
    const messages = projectHistory(loadSampleLog('multi-tool'), {
      provider: 'anthropic.messages',
    });
    expect(messages.slice(1)).toStrictEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: "I'll list docs/ and read the install guide." },
          {
            type: 'tool-call',
            callId: 'call_BAQfNK0SDCrgVqbop1Srpwbx',
            name: 'listFiles',
            input: { path: 'docs' },
          },
          {
            type: 'tool-call',
            callId: 'call_bJbCYm4CXOhcShxV8YqAPSaF',
            name: 'readFile',
            input: { path: 'docs/install.md' },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            callId: 'call_BAQfNK0SDCrgVqbop1Srpwbx',
            name: 'listFiles',
            text: 'guide.md\nsetup.md\ntroubleshooting.md',
            isError: false,
          },
          {
            type: 'tool-result',
            callId: 'call_bJbCYm4CXOhcShxV8YqAPSaF',
            name: 'readFile',
            text: "ENOENT: no such file or directory, open 'docs/install.md'",
            isError: true,
          },
        ],
      },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'There is no docs/install.md. docs/ holds guide.md, setup.md and troubleshooting.md; the install steps are most likely in setup.md. Shall I summarize that one?',
          },
        ],
      },
    ]);
  });

  it('projects permission with the allowed result, then the denied result as an error', () => {
    expect(
      projectHistory(loadSampleLog('permission'), { provider: 'anthropic.messages' }),
    ).toStrictEqual([
      { role: 'user', content: 'Clean the build output.' },
      {
        role: 'assistant',
        content: [
          {
            type: 'reasoning',
            text: 'The build output is dist/. Removing it needs runCommand, which asks the user first.',
            providerOptions: {
              anthropic: {
                signature:
                  'EqQBCkgIBxABGAIiQDnao0LbVMcSh021u7RAthIW9XOAeG64qSsrvahD10iB0uFvdVrSxM6QL1P19BrmS9i8AWe7BcLL1vT4X',
              },
            },
          },
          { type: 'text', text: "I'll remove the dist/ folder." },
          {
            type: 'tool-call',
            callId: 'toolu_011yZvyzRQVznWwMbahyA70M',
            name: 'runCommand',
            input: { command: 'rm -rf dist' },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            callId: 'toolu_011yZvyzRQVznWwMbahyA70M',
            name: 'runCommand',
            text: 'exit code 0',
            isError: false,
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Done: dist/ is gone.' }] },
      { role: 'user', content: 'Push the branch to origin.' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: "I'll push the current branch." },
          {
            type: 'tool-call',
            callId: 'toolu_01gLSRY9WvfYIhcZjR03wKGN',
            name: 'runCommand',
            input: { command: 'git push origin HEAD' },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            callId: 'toolu_01gLSRY9WvfYIhcZjR03wKGN',
            name: 'runCommand',
            text: 'The user denied this call: Not yet, I want to review the diff first.',
            isError: true,
          },
        ],
      },
      {
        role: 'assistant',
        content: [{ type: 'text', text: "Understood, I won't push. Tell me when you're ready." }],
      },
    ]);
  });

  it('puts steering that arrived while a call ran right after that step’s tool message', () => {
    expect(
      projectHistory(loadSampleLog('steering'), { provider: 'google.generative-ai' }),
    ).toStrictEqual([
      { role: 'user', content: 'Run the tests and tell me what fails.' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Running the test suite.' },
          {
            type: 'tool-call',
            callId: 'TfhovlIc1CvAiadd',
            name: 'runTests',
            input: { pattern: 'test/**/*.test.ts' },
            providerOptions: {
              google: {
                thoughtSignature:
                  'CiQBi1C1BqENDfFfMlnCbxCiRN4gy8eJsn2jqnKBJBmjHMKGMde1fUoZBUoT7Qbv',
              },
            },
          },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            callId: 'TfhovlIc1CvAiadd',
            name: 'runTests',
            text: '2 failed, 41 passed\nFAIL test/store/lowdb-store.test.ts > reopens after close\nFAIL test/events/project-turn.test.ts > sums usage',
            isError: false,
          },
        ],
      },
      { role: 'user', content: 'Only the store tests matter, the rest are known to be flaky.' },
      {
        role: 'assistant',
        content: [
          {
            type: 'text',
            text: 'One store test fails: test/store/lowdb-store.test.ts > reopens after close.',
          },
        ],
      },
    ]);
  });
});
