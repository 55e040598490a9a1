/**
 * What a new password must be (NIST SP 800-63B: length, no composition rules). Characters are counted as
 * code points, so a passphrase in any script counts what a person typed; the byte limit keeps one hash
 * input bounded.
 */
export const PASSWORD_MIN_CHARACTERS = 10;
export const PASSWORD_MAX_BYTES = 256;

export type PasswordProblem = 'too_short' | 'too_long' | 'same_as_username' | 'control_characters';

export function passwordProblem(password: string, username: string): PasswordProblem | null {
  const normalised = password.normalize('NFC');
  if ([...normalised].length < PASSWORD_MIN_CHARACTERS) return 'too_short';
  if (Buffer.byteLength(normalised, 'utf8') > PASSWORD_MAX_BYTES) return 'too_long';
  // A newline or NUL is almost always a paste or a --password-stdin file gone wrong, not a chosen character.
  if (/\p{Cc}/u.test(normalised)) return 'control_characters';
  if (normalised.toLowerCase() === username.toLowerCase()) return 'same_as_username';
  return null;
}

export const PASSWORD_PROBLEM_TEXT: Record<PasswordProblem, string> = {
  too_short: `the password must be at least ${PASSWORD_MIN_CHARACTERS} characters`,
  too_long: `the password must be at most ${PASSWORD_MAX_BYTES} bytes (UTF-8)`,
  control_characters: 'the password may not contain control characters (tabs, newlines)',
  same_as_username: 'the password may not be the username',
};
