import { z } from 'zod';

/**
 * The flat forum item, keyed by dataType (field names as the Apify reddit scraper users know them).
 * A value the upstream did not give is null, never a placeholder.
 */
const common = {
  id: z.string().describe('Reddit fullname (t3_…, t1_…, t5_…, t2_…): unique across dataTypes.'),
  url: z.string(),
  createdAt: z.string().nullable(),
  scrapedAt: z.string(),
};
const s = z.string().nullable();
const n = z.number().nullable();
const b = z.boolean().nullable();

export const ForumPost = z.object({
  dataType: z.literal('post'), ...common, username: s, userId: s, title: s, body: s, communityName: s, upVotes: n, upVoteRatio: n,
  numberOfComments: n, flair: s, over18: b, isVideo: b, link: s, thumbnailUrl: s, imageUrls: z.array(z.string()), videoUrls: z.array(z.string()),
});
export const ForumComment = z.object({
  dataType: z.literal('comment'), ...common, username: s, userId: s, body: s, communityName: s, upVotes: n, numberOfReplies: n, flair: s,
  over18: b, postId: s, parentId: s, postTitle: s,
});
export const ForumCommunity = z.object({
  dataType: z.literal('community'), ...common, name: s, title: s, body: s, communityName: s, numberOfMembers: n, over18: b, thumbnailUrl: s,
});
export const ForumUser = z.object({
  dataType: z.literal('user'), ...common, username: s, body: s, over18: b, thumbnailUrl: s, postKarma: n, commentKarma: n,
});
export const ForumItem = z.discriminatedUnion('dataType', [ForumPost, ForumComment, ForumCommunity, ForumUser]).meta({ id: 'ForumItem' });
export type ForumItemT = z.infer<typeof ForumItem>;
export type ForumPostT = z.infer<typeof ForumPost>;
export type ForumCommentT = z.infer<typeof ForumComment>;

type Raw = Record<string, unknown>;
const WWW = 'https://www.reddit.com';
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const bool = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null);
const obj = (v: unknown): Raw | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Raw) : null);
const iso = (v: unknown): string | null => (typeof v === 'number' && Number.isFinite(v) ? new Date(v * 1000).toISOString() : null);
/** Deleted/removed accounts and texts are unknown, not the literal "[deleted]". */
const person = (v: unknown): string | null => { const x = str(v); return x === '[deleted]' || x === '[removed]' ? null : x; };
const text = (v: unknown): string | null => { const x = str(v); return x === '[deleted]' || x === '[removed]' ? null : x; };
const permalink = (v: unknown): string | null => { const p = str(v); return p ? (p.startsWith('http') ? p : WWW + p) : null; };
const httpUrl = (v: unknown): string | null => { const x = str(v); return x && /^https?:\/\//.test(x) ? x : null; };

function imageUrls(d: Raw): string[] {
  const meta = obj(d.media_metadata);
  const gallery = obj(d.gallery_data);
  if (meta && gallery && Array.isArray(gallery.items)) {
    return gallery.items.map((it) => str(obj(obj(meta[String(obj(it)?.media_id)])?.s)?.u)).filter((u): u is string => u !== null);
  }
  const images = obj(d.preview)?.images;
  if (Array.isArray(images) && images.length) return images.map((im) => str(obj(obj(im)?.source)?.url)).filter((u): u is string => u !== null);
  const dest = str(d.url_overridden_by_dest) ?? str(d.url);
  if (dest && (/^https:\/\/i\.redd\.it\//.test(dest) || /\.(png|jpe?g|gif|webp)(\?|$)/i.test(dest))) return [dest];
  return [];
}

function videoUrls(d: Raw): string[] {
  const out: string[] = [];
  for (const video of [obj(obj(d.secure_media)?.reddit_video), obj(obj(d.media)?.reddit_video), obj(obj(d.preview)?.reddit_video_preview)]) {
    for (const u of [video?.fallback_url, video?.hls_url]) { const x = str(u); if (x && !out.includes(x)) out.push(x); }
  }
  return out;
}

export function mapPost(d: Raw, scrapedAt: string): ForumPostT {
  const isSelf = bool(d.is_self);
  return {
    dataType: 'post', id: str(d.name) ?? `t3_${String(d.id)}`, url: permalink(d.permalink) ?? `${WWW}/comments/${String(d.id)}/`,
    username: person(d.author), userId: person(d.author) ? str(d.author_fullname) : null, title: str(d.title),
    // selftext is "" for link posts: no body, which is null here.
    body: text(d.selftext), communityName: str(d.subreddit_name_prefixed), upVotes: num(d.score), upVoteRatio: num(d.upvote_ratio),
    numberOfComments: num(d.num_comments), flair: str(d.link_flair_text), over18: bool(d.over_18), isVideo: bool(d.is_video),
    link: isSelf === false ? httpUrl(d.url_overridden_by_dest) ?? httpUrl(d.url) : null,
    thumbnailUrl: httpUrl(d.thumbnail), imageUrls: imageUrls(d), videoUrls: videoUrls(d),
    createdAt: iso(d.created_utc), scrapedAt,
  };
}

export function mapComment(d: Raw, scrapedAt: string, context: { over18?: boolean | null; postTitle?: string | null } = {}): ForumCommentT {
  return {
    dataType: 'comment', id: str(d.name) ?? `t1_${String(d.id)}`, url: permalink(d.permalink) ?? `${WWW}/comments/${String(d.link_id).replace(/^t3_/, '')}/_/${String(d.id)}/`,
    username: person(d.author), userId: person(d.author) ? str(d.author_fullname) : null, body: text(d.body), communityName: str(d.subreddit_name_prefixed),
    upVotes: d.score_hidden === true ? null : num(d.score), numberOfReplies: null, flair: str(d.author_flair_text),
    over18: bool(d.over_18) ?? context.over18 ?? null, postId: str(d.link_id), parentId: str(d.parent_id),
    postTitle: str(d.link_title) ?? context.postTitle ?? null, createdAt: iso(d.created_utc), scrapedAt,
  };
}

export function mapCommunity(d: Raw, scrapedAt: string): z.infer<typeof ForumCommunity> {
  return {
    dataType: 'community', id: str(d.name) ?? `t5_${String(d.id)}`, url: permalink(d.url) ?? `${WWW}/r/${String(d.display_name)}/`,
    name: str(d.display_name), title: str(d.title), body: str(d.public_description), communityName: str(d.display_name_prefixed),
    numberOfMembers: num(d.subscribers), over18: bool(d.over18), thumbnailUrl: httpUrl(d.community_icon) ?? httpUrl(d.icon_img),
    createdAt: iso(d.created_utc), scrapedAt,
  };
}

export function mapUser(d: Raw, scrapedAt: string): z.infer<typeof ForumUser> {
  const sub = obj(d.subreddit);
  return {
    dataType: 'user', id: `t2_${String(d.id)}`, url: `${WWW}/user/${String(d.name)}/`, username: str(d.name), body: str(sub?.public_description),
    over18: bool(sub?.over_18), thumbnailUrl: httpUrl(d.icon_img), postKarma: num(d.link_karma), commentKarma: num(d.comment_karma),
    createdAt: iso(d.created_utc), scrapedAt,
  };
}

/** Billing/dedupe key: fullnames are unique across kinds, the dataType makes it explicit. */
export const forumItemKey = (item: unknown): string => { const i = item as { dataType: string; id: string }; return `${i.dataType}:${i.id}`; };
