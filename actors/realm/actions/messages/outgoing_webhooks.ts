/**
 * Outgoing webhooks: a message that mentions an outgoing-webhook bot, or a
 * direct message to one, is posted to the bot's URL as Zulip does (JSON:
 * `data`, `message`, `bot_email`, `bot_full_name`, `token`, `trigger`); a
 * reply with `content` (or the older `response_string`) is sent back as the
 * bot, to the same topic or conversation, unless it says
 * `response_not_required`.
 *
 * The send's commit sets a durable timer (`noteOutgoingWebhooks`, as Zulip's
 * `outgoing_webhooks` queue worker takes the event after the transaction);
 * its effect, outside the realm's mailbox, does the posting, so the sender
 * never waits for a third-party server. Each post is tried three times
 * (network errors and 5xx answers, 1 s then 2 s apart, 10 s each); a bot
 * server that still fails, or answers 4xx, is given up. What fails on
 * Parley's side (reading the message, sending the bot's answer) is retried by
 * a new timer with only the bots not done, an answer already received kept,
 * so that a bot is posted again only if the server stopped while serving it
 * (at least once).
 */
import { ApiError } from '../../../../lib/errors.ts';
import { log as rootLog } from '../../../../lib/log.ts';
import type { ActorClient } from '../../../runtime/client.ts';
import { defineTimer, FOLLOW_UP_DELAY_MS, type Tx } from '../../../runtime/action.ts';
import { userActorId, userRef } from '../../../user/ref.ts';
import type { ServiceTrigger } from '../people/bots.ts';
import { realmActorId, realmRef } from '../../ref.ts';
import type { RealmState } from '../../state/state.ts';

const timer = defineTimer<RealmState>();
const log = rootLog.child({ component: 'outgoing-webhooks' });
const OUTGOING_WEBHOOKS = 'outgoingWebhooks';
const ATTEMPTS = 3;
const TIMEOUT_MS = 10_000;
/** A failure on Parley's side is retried this many times, RETRY_MS apart. */
const FOLLOW_UP_ATTEMPTS = 10;
const RETRY_MS = 5_000;

/** The bot's answer, where the message went: the same topic, or the same conversation without the bot. */
interface Answer {
  recipientType: 'stream' | 'private';
  to: number | number[];
  topic: string | null;
  content: string;
}

/** One bot's part of the work; with `answer` once its server answered, when only sending that remains. */
interface Pending {
  bot: ServiceTrigger;
  answer?: Answer;
}

interface Payload {
  senderId: number;
  messageId: number;
  pending: Pending[];
  attempt: number;
}

/** Call in the send's commit: sets the follow-up that serves the bots the message triggers. */
export function noteOutgoingWebhooks(messageId: number, senderId: number, bots: ServiceTrigger[], tx: Tx): void {
  if (bots.length === 0) return;
  const payload: Payload = { senderId, messageId, pending: bots.map((bot) => ({ bot })), attempt: 1 };
  tx.setTimer(OUTGOING_WEBHOOKS, Date.now() + FOLLOW_UP_DELAY_MS, payload, messageId);
}

export const outgoingWebhooks = timer({
  name: OUTGOING_WEBHOOKS,
  /** Serves each pending bot; resolves with the work that failed on Parley's side. */
  async effect(state, p: Payload, ctx): Promise<Pending[]> {
    const realmId = state.realmId;
    let message: Record<string, unknown> | null = null;
    if (p.pending.some((x) => !x.answer)) {
      try {
        // The message as its sender sees it, who may certainly read it (the bot need not be subscribed).
        const got = await ctx.actors.call(userRef, userActorId(realmId, p.senderId), { type: 'getMessage', caller: { realmId, userId: p.senderId }, id: p.messageId, applyMarkdown: false, clientExtavatar: false });
        const { flags: _flags, ...plain } = got.message as Record<string, unknown>;
        message = plain;
      } catch (err) {
        // Deleted since, or its sender deactivated: nothing to post. Otherwise (a timeout, a moving shard) later.
        if (err instanceof ApiError && err.status < 500 && !err.retryable) return [];
        log.warn({ err, messageId: p.messageId }, 'outgoing webhooks: the message could not be read; retrying');
      }
    }
    const left = await Promise.all(p.pending.map((x) => serve(ctx.actors, realmId, message, x)));
    return left.filter((x): x is Pending => x !== null);
  },
  check: (_state, p: Payload, _ctx, left) => ({ p, left }),
  apply(_state, { p, left }, tx) {
    if (left.length === 0) return null;
    if (p.attempt >= FOLLOW_UP_ATTEMPTS) {
      log.warn({ messageId: p.messageId, bots: left.map((x) => x.bot.botId) }, 'outgoing webhooks given up');
      return null;
    }
    tx.setTimer(OUTGOING_WEBHOOKS, Date.now() + RETRY_MS, { ...p, pending: left, attempt: p.attempt + 1 } satisfies Payload, p.messageId);
    return null;
  },
});

/**
 * Posts the message to the bot, unless it answered already, and sends its
 * answer as the bot. Returns null once done (or given up on the bot's side),
 * or the work left when Parley's side failed.
 */
async function serve(actors: ActorClient, realmId: number, message: Record<string, unknown> | null, work: Pending): Promise<Pending | null> {
  const { bot } = work;
  let answer = work.answer;
  if (!answer) {
    if (!message) return work;
    const payload = { data: message.content, message, bot_email: bot.email, bot_full_name: bot.fullName, token: bot.token, trigger: bot.trigger };
    const got = await post(bot.baseUrl, payload);
    if (got === null || got.response_not_required === true) return null;
    const content = typeof got.content === 'string' ? got.content : typeof got.response_string === 'string' ? got.response_string : null;
    if (!content?.trim()) return null;
    const isDm = message.type === 'private';
    answer = {
      recipientType: isDm ? 'private' : 'stream',
      to: isDm ? (message.display_recipient as Array<{ id: number }>).map((r) => r.id).filter((id) => id !== bot.botId) : (message.stream_id as number),
      topic: isDm ? null : (message.subject as string),
      content,
    };
  }
  try {
    await actors.call(realmRef, realmActorId(realmId), { type: 'sendMessage', caller: { realmId, userId: bot.botId }, client: 'OutgoingWebhook', ...answer, readBySender: null, queueId: null, localId: null });
    return null;
  } catch (err) {
    // Refused (the bot deactivated, the channel gone): final. Otherwise the answer is sent again later.
    if (err instanceof ApiError && err.status < 500 && !err.retryable) {
      log.warn({ err: err.message, botId: bot.botId }, 'outgoing webhook answer refused');
      return null;
    }
    log.warn({ err, botId: bot.botId }, 'outgoing webhook answer not sent; retrying');
    return { bot, answer };
  }
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
