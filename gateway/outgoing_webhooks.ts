/**
 * Outgoing webhooks: a message that mentions an outgoing-webhook bot, or a
 * direct message to one, is posted to the bot's URL as Zulip does (JSON:
 * `data`, `message`, `bot_email`, `bot_full_name`, `token`, `trigger`); a
 * reply with `content` (or the older `response_string`) is sent back as the
 * bot, to the same topic or conversation, unless it says
 * `response_not_required`.
 *
 * The gateway that answered the send does this after answering, so the
 * sender never waits for a third-party server. Each post is tried three
 * times (network errors and 5xx answers, 1 s then 2 s apart, 10 s each). A
 * gateway that stops before then drops it: delivery is at most once, where
 * Zulip's queue worker retries from a durable queue.
 */
import type { ServiceTrigger } from '../actors/realm/bots.ts';
import { realmActorId, realmRef } from '../actors/realm/ref.ts';
import { userActorId, userRef } from '../actors/user/ref.ts';
import type { ActorClient } from '../actors/runtime/client.ts';
import { log as rootLog } from '../lib/log.ts';

const log = rootLog.child({ component: 'outgoing-webhooks' });
const ATTEMPTS = 3;
const TIMEOUT_MS = 10_000;

interface Sent {
  realmId: number;
  senderId: number;
  messageId: number;
}

/** Posts the message to each bot it triggers and sends their answers; never throws. */
export async function dispatchOutgoingWebhooks(actors: ActorClient, sent: Sent, bots: ServiceTrigger[]): Promise<void> {
  try {
    // The message as its sender sees it, who may certainly read it (the bot need not be subscribed).
    const { message } = (await actors.call(userRef, userActorId(sent.realmId, sent.senderId), {
      type: 'getMessage',
      caller: { realmId: sent.realmId, userId: sent.senderId },
      id: sent.messageId,
      applyMarkdown: false,
      clientExtavatar: false,
    })) as { message: Record<string, unknown> };
    const { flags: _flags, ...plain } = message;
    await Promise.all(bots.map((bot) => serve(actors, sent.realmId, plain, bot)));
  } catch (err) {
    log.warn({ err, messageId: sent.messageId }, 'outgoing webhooks not sent');
  }
}

async function serve(actors: ActorClient, realmId: number, message: Record<string, unknown>, bot: ServiceTrigger): Promise<void> {
  const payload = { data: message.content, message, bot_email: bot.email, bot_full_name: bot.fullName, token: bot.token, trigger: bot.trigger };
  const answer = await post(bot.baseUrl, payload);
  if (answer === null || answer.response_not_required === true) return;
  const content = typeof answer.content === 'string' ? answer.content : typeof answer.response_string === 'string' ? answer.response_string : null;
  if (!content?.trim()) return;
  const isDm = message.type === 'private';
  const participants = isDm ? (message.display_recipient as Array<{ id: number }>).map((r) => r.id).filter((id) => id !== bot.botId) : [];
  await actors.call(realmRef, realmActorId(realmId), {
    type: 'sendMessage',
    caller: { realmId, userId: bot.botId },
    client: 'OutgoingWebhook',
    recipientType: isDm ? 'private' : 'stream',
    to: isDm ? participants : (message.stream_id as number),
    topic: isDm ? null : (message.subject as string),
    content,
    readBySender: null,
    queueId: null,
    localId: null,
  });
}

/** The bot server's JSON answer ({} for an empty or non-JSON 2xx body), or null once every attempt failed. */
async function post(url: string, payload: unknown): Promise<Record<string, unknown> | null> {
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload), signal: AbortSignal.timeout(TIMEOUT_MS) });
      const text = await res.text();
      if (res.ok) {
        try {
          const body: unknown = text ? JSON.parse(text) : {};
          return body && typeof body === 'object' ? (body as Record<string, unknown>) : {};
        } catch {
          return {};
        }
      }
      // A 4xx is the bot server's final word; a 5xx may pass.
      if (res.status < 500) {
        log.warn({ url, status: res.status }, 'outgoing webhook refused');
        return null;
      }
      log.warn({ url, status: res.status, attempt }, 'outgoing webhook failed');
    } catch (err) {
      log.warn({ url, err: (err as Error).message, attempt }, 'outgoing webhook failed');
    }
    if (attempt < ATTEMPTS) await new Promise((r) => setTimeout(r, 1000 * attempt));
  }
  return null;
}
