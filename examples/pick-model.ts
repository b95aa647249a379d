// The model every example runs with: OpenAI when OPENAI_API_KEY is set, else Google when
// GOOGLE_GENERATIVE_AI_API_KEY is set, else an offline scripted model. It prints its choice.
import {
  type AiSdkLanguageModel,
  type ScriptedResponse,
  type ScriptedStep,
  scriptedModel,
} from '../index.ts';

/** One request to the scripted model: the AI SDK call options, with the `prompt` it is sent. */
export type ScriptedCall = Parameters<Extract<ScriptedStep, (call: never) => unknown>>[0];

/** The offline model's next response, decided from the conversation the model is sent. */
export type ScriptedReply = (call: ScriptedCall) => ScriptedResponse;

/**
 * Picks the example's model and prints which one (`model: …`). `offline` is the script played
 * without an API key: a list of steps (one per provider request), or a function of each request
 * (which keeps working when a recovered run resumes in a new process, where a list would start
 * over). Tool calls a function leaves without an id get `call_<n>`, where n is the number of
 * messages the model was sent, so ids never repeat within a session.
 *
 * @example
 * const model = await pickModel([{ text: 'Hello!' }]);
 */
export async function pickModel(
  offline: ScriptedStep[] | ScriptedReply,
): Promise<AiSdkLanguageModel> {
  if (process.env.OPENAI_API_KEY) {
    const { openai } = await import('@ai-sdk/openai');
    console.log('model: openai gpt-4.1-mini');
    return openai('gpt-4.1-mini');
  }
  if (process.env.GOOGLE_GENERATIVE_AI_API_KEY) {
    const { google } = await import('@ai-sdk/google');
    console.log('model: google gemini-2.5-flash');
    return google('gemini-2.5-flash');
  }
  console.log(
    'model: scripted (offline; set OPENAI_API_KEY or GOOGLE_GENERATIVE_AI_API_KEY for a real model)',
  );
  return Array.isArray(offline) ? scriptedModel(offline) : conversationModel(offline);
}

/** A scripted model that asks `reply` for every request, however many there are. */
function conversationModel(reply: ScriptedReply): AiSdkLanguageModel {
  const play = (call: ScriptedCall) => {
    const response = reply(call);
    const toolCalls = response.toolCalls?.map((toolCall, index) => ({
      ...toolCall,
      id: toolCall.id ?? `call_${call.prompt.length}${index === 0 ? '' : `_${index + 1}`}`,
    }));
    return scriptedModel([toolCalls === undefined ? response : { ...response, toolCalls }]);
  };
  return {
    specificationVersion: 'v4',
    provider: 'scripted',
    modelId: 'scripted-model',
    supportedUrls: {},
    doStream: (call) => play(call).doStream(call),
    doGenerate: (call) => play(call).doGenerate(call),
  };
}
