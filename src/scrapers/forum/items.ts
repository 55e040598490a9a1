import { z } from 'zod';

/**
 * The flat forum item, keyed by dataType (field names as the Apify reddit scraper users know them).
 * Every item carries every field of every dataType: a field that does not apply to its dataType is null
 * (a comment's `title`, a post's `numberOfReplies`), and a value the upstream did not give is null too,
 * never a placeholder. Ids and URLs are required: a record without them is not delivered (or billed).
 */
const s = z.string().nullable();
const n = z.number().nullable();
const b = z.boolean().nullable();
const NA = z.null();
const fullname = (prefix: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}_[a-z0-9]+$`), `a Reddit fullname ${prefix}_…`)
    .describe(`Reddit fullname (${prefix}_…): unique across dataTypes.`);
const common = {
  url: z.string().regex(/^https:\/\/www\.reddit\.com\/\S+$/, 'a https://www.reddit.com/… URL'),
  createdAt: s,
  scrapedAt: z.string(),
};
/** Every field any dataType has, null unless its dataType sets it. */
const ALL_FIELDS = {
  username: NA,
  userId: NA,
  title: NA,
  body: NA,
  communityName: NA,
  upVotes: NA,
  upVoteRatio: NA,
  numberOfComments: NA,
  numberOfReplies: NA,
  flair: NA,
  over18: NA,
  isVideo: NA,
  link: NA,
  thumbnailUrl: NA,
  imageUrls: NA,
  videoUrls: NA,
  postId: NA,
  parentId: NA,
  postTitle: NA,
  name: NA,
  numberOfMembers: NA,
  postKarma: NA,
  commentKarma: NA,
};

export const ForumPost = z.object({
  dataType: z.literal('post'),
  id: fullname('t3'),
  ...common,
  ...ALL_FIELDS,
  username: s,
  userId: s,
  title: s,
  body: s,
  communityName: s,
  upVotes: n,
  upVoteRatio: n,
  numberOfComments: n,
  flair: s,
  over18: b,
  isVideo: b,
  link: s,
  thumbnailUrl: s,
  imageUrls: z.array(z.string()),
  videoUrls: z.array(z.string()),
});
export const ForumComment = z.object({
  dataType: z.literal('comment'),
  id: fullname('t1'),
  ...common,
  ...ALL_FIELDS,
  username: s,
  userId: s,
  body: s,
  communityName: s,
  upVotes: n,
  numberOfReplies: n.describe('Direct replies: those read plus what Reddit declares in unexpanded "more" stubs.'),
  flair: s,
  over18: b,
  postId: s,
  parentId: s,
  postTitle: s,
});
export const ForumCommunity = z.object({
  dataType: z.literal('community'),
  id: fullname('t5'),
  ...common,
  ...ALL_FIELDS,
  name: s,
  title: s,
  body: s,
  communityName: s,
  numberOfMembers: n,
  over18: b,
  thumbnailUrl: s,
});
export const ForumUser = z.object({
  dataType: z.literal('user'),
  id: fullname('t2'),
  ...common,
  ...ALL_FIELDS,
  username: s,
  body: s,
  over18: b,
  thumbnailUrl: s,
  postKarma: n,
  commentKarma: n,
});
export const ForumItem = z
  .discriminatedUnion('dataType', [ForumPost, ForumComment, ForumCommunity, ForumUser])
  .meta({ id: 'ForumItem' });
export type ForumItemT = z.infer<typeof ForumItem>;
export type ForumPostT = z.infer<typeof ForumPost>;
export type ForumCommentT = z.infer<typeof ForumComment>;
/** A mapped record before validation: its id or URL may be missing (then the sink drops it). */
export type Draft<T> = Omit<T, 'id' | 'url'> & { id: string | null; url: string | null };

/** The all-null base every mapped item starts from (fields of other dataTypes stay null). */
const NULLS: { [K in keyof typeof ALL_FIELDS]: null } = Object.fromEntries(
  Object.keys(ALL_FIELDS).map((k) => [k, null]),
) as never;

type Raw = Record<string, unknown>;
const WWW = 'https://www.reddit.com';
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const bool = (v: unknown): boolean | null => (typeof v === 'boolean' ? v : null);
const obj = (v: unknown): Raw | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Raw) : null);
const iso = (v: unknown): string | null =>
  typeof v === 'number' && Number.isFinite(v) ? new Date(v * 1000).toISOString() : null;
/** Deleted/removed accounts and texts are unknown, not the literal "[deleted]". */
const person = (v: unknown): string | null => {
  const x = str(v);
  return x === '[deleted]' || x === '[removed]' ? null : x;
};
const text = (v: unknown): string | null => {
  const x = str(v);
  return x === '[deleted]' || x === '[removed]' ? null : x;
};
const permalink = (v: unknown): string | null => {
  const p = str(v);
  return p ? (p.startsWith('http') ? p : WWW + p) : null;
};
const httpUrl = (v: unknown): string | null => {
  const x = str(v);
  return x && /^https?:\/\//.test(x) ? x : null;
};
/** A Reddit base-36 id, or null: never "undefined" spliced into an id or URL. */
const id36 = (v: unknown): string | null => {
  const x = str(v);
  return x && /^[a-z0-9]+$/i.test(x) ? x.toLowerCase() : null;
};
const fullnameOf = (d: Raw, prefix: string): string | null => {
  const name = str(d.name);
  if (name && name.startsWith(`${prefix}_`)) return name;
  const id = id36(d.id);
  return id ? `${prefix}_${id}` : null;
};

function imageUrls(d: Raw): string[] {
  const meta = obj(d.media_metadata);
  const gallery = obj(d.gallery_data);
  if (meta && gallery && Array.isArray(gallery.items)) {
    return gallery.items
      .map((it) => str(obj(obj(meta[String(obj(it)?.media_id)])?.s)?.u))
      .filter((u): u is string => u !== null);
  }
  const images = obj(d.preview)?.images;
  if (Array.isArray(images) && images.length)
    return images.map((im) => str(obj(obj(im)?.source)?.url)).filter((u): u is string => u !== null);
  const dest = str(d.url_overridden_by_dest) ?? str(d.url);
  if (dest && (/^https:\/\/i\.redd\.it\//.test(dest) || /\.(png|jpe?g|gif|webp)(\?|$)/i.test(dest))) return [dest];
  return [];
}

function videoUrls(d: Raw): string[] {
  const out: string[] = [];
  for (const video of [
    obj(obj(d.secure_media)?.reddit_video),
    obj(obj(d.media)?.reddit_video),
    obj(obj(d.preview)?.reddit_video_preview),
  ]) {
    for (const u of [video?.fallback_url, video?.hls_url]) {
      const x = str(u);
      if (x && !out.includes(x)) out.push(x);
    }
  }
  return out;
}

export function mapPost(d: Raw, scrapedAt: string): Draft<ForumPostT> {
  const isSelf = bool(d.is_self);
  const id = fullnameOf(d, 't3');
  return {
    ...NULLS,
    dataType: 'post',
    id,
    url: permalink(d.permalink) ?? (id ? `${WWW}/comments/${id.slice(3)}/` : null),
    username: person(d.author),
    userId: person(d.author) ? str(d.author_fullname) : null,
    title: str(d.title),
    // selftext is "" for link posts: no body, which is null here.
    body: text(d.selftext),
    communityName: str(d.subreddit_name_prefixed),
    upVotes: num(d.score),
    upVoteRatio: num(d.upvote_ratio),
    numberOfComments: num(d.num_comments),
    flair: str(d.link_flair_text),
    over18: bool(d.over_18),
    isVideo: bool(d.is_video),
    link: isSelf === false ? (httpUrl(d.url_overridden_by_dest) ?? httpUrl(d.url)) : null,
    thumbnailUrl: httpUrl(d.thumbnail),
    imageUrls: imageUrls(d),
    videoUrls: videoUrls(d),
    createdAt: iso(d.created_utc),
    scrapedAt,
  };
}

export function mapComment(
  d: Raw,
  scrapedAt: string,
  context: { over18?: boolean | null; postTitle?: string | null } = {},
): Draft<ForumCommentT> {
  const id = fullnameOf(d, 't1');
  const post = id36(str(d.link_id)?.replace(/^t3_/, ''));
  return {
    ...NULLS,
    dataType: 'comment',
    id,
    url: permalink(d.permalink) ?? (id && post ? `${WWW}/comments/${post}/_/${id.slice(3)}/` : null),
    username: person(d.author),
    userId: person(d.author) ? str(d.author_fullname) : null,
    body: text(d.body),
    communityName: str(d.subreddit_name_prefixed),
    upVotes: d.score_hidden === true ? null : num(d.score),
    numberOfReplies: null,
    flair: str(d.author_flair_text),
    over18: bool(d.over_18) ?? context.over18 ?? null,
    postId: str(d.link_id),
    parentId: str(d.parent_id),
    postTitle: str(d.link_title) ?? context.postTitle ?? null,
    createdAt: iso(d.created_utc),
    scrapedAt,
  };
}

export function mapCommunity(d: Raw, scrapedAt: string): Draft<z.infer<typeof ForumCommunity>> {
  const name = str(d.display_name);
  return {
    ...NULLS,
    dataType: 'community',
    id: fullnameOf(d, 't5'),
    url: permalink(d.url) ?? (name ? `${WWW}/r/${name}/` : null),
    name: str(d.display_name),
    title: str(d.title),
    body: str(d.public_description),
    communityName: str(d.display_name_prefixed),
    numberOfMembers: num(d.subscribers),
    over18: bool(d.over18),
    thumbnailUrl: httpUrl(d.community_icon) ?? httpUrl(d.icon_img),
    createdAt: iso(d.created_utc),
    scrapedAt,
  };
}

export function mapUser(d: Raw, scrapedAt: string): Draft<z.infer<typeof ForumUser>> {
  const sub = obj(d.subreddit);
  const id = id36(d.id);
  const name = str(d.name);
  return {
    ...NULLS,
    dataType: 'user',
    id: id ? `t2_${id}` : null,
    url: name ? `${WWW}/user/${name}/` : null,
    username: name,
    body: str(sub?.public_description),
    over18: bool(sub?.over_18),
    thumbnailUrl: httpUrl(d.icon_img),
    postKarma: num(d.link_karma),
    commentKarma: num(d.comment_karma),
    createdAt: iso(d.created_utc),
    scrapedAt,
  };
}

/** Billing/dedupe key: fullnames are unique across kinds, the dataType makes it explicit. */
export const forumItemKey = (item: unknown): string => {
  const i = item as { dataType: string; id: string };
  return `${i.dataType}:${i.id}`;
};
