/** Names and ids as people type them (pure: unit-tested). */

/** "Zoë O'Brien" -> "zoe-o-brien": an id from a name (letters, digits, . _ -; at most 48 characters). */
export function idFromName(name: string, fallback = 'person'): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+|-+$/g, '')
    .slice(0, 48)
    .replace(/-+$/, '');
  return slug || fallback;
}

/** `base`, else `base-2`, `base-3` ...: the first not in `taken`. */
export function firstFreeId(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
}

/** "Barack Obama" -> "BO" (the placeholder of a person without a saved crop). */
export function initials(name: string): string {
  const words = name.split(/[\s._-]+/).filter(Boolean);
  return (
    words.length > 1 ? words[0]![0]! + words[words.length - 1]![0]! : (words[0] ?? '?').slice(0, 2)
  ).toUpperCase();
}

/**
 * The camera URL with the user and password typed beside it (percent-encoded, so ":" or "@" in a password
 * stays intact); they replace any credentials in the URL. Without them the URL is as typed.
 */
export function withCredentials(url: string, user: string, password: string): string {
  const u = url.trim();
  if (!user && !password) return u;
  const m = /^(rtsps?:\/\/)(?:[^@/]*@)?(.*)$/i.exec(u);
  if (!m) return u;
  const auth = encodeURIComponent(user) + (password ? `:${encodeURIComponent(password)}` : '');
  return `${m[1]}${auth}@${m[2]}`;
}
