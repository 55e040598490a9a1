import { createHash, randomInt, timingSafeEqual } from 'node:crypto';

/** No 0/O, 1/I/L: a code read off a journal line and typed on a phone should survive both. */
const ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
const GROUPS = 3;
const GROUP_LENGTH = 4;

/** A fresh code, e.g. "K7QP-M2XD-9HRT" (12 symbols of 31: about 59 bits). */
export function newSetupCode(): string {
  const groups: string[] = [];
  for (let g = 0; g < GROUPS; g++) {
    let s = '';
    for (let i = 0; i < GROUP_LENGTH; i++) s += ALPHABET[randomInt(ALPHABET.length)];
    groups.push(s);
  }
  return groups.join('-');
}

/** What a person typed, as the code is compared: case, spaces and dashes do not matter. */
export const normaliseSetupCode = (typed: string): string => typed.toUpperCase().replace(/[\s-]+/g, '');

const digest = (s: string) => createHash('sha256').update(normaliseSetupCode(s)).digest();

/** Constant-time comparison of a typed code with the issued one. */
export function setupCodeMatches(issued: string, typed: string): boolean {
  return timingSafeEqual(digest(issued), digest(typed));
}
