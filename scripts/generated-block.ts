/** A generated block of a hand-written page: the text between a start and an end marker is replaced. */
export function withGeneratedBlock(page: string, start: string, end: string, body: string, pageName: string): string {
  const a = page.indexOf(start),
    b = page.indexOf(end);
  if (a < 0 || b < a) throw new Error(`${pageName} has no ${start} … ${end} markers`);
  return `${page.slice(0, a + start.length)}\n${body}\n${page.slice(b)}`;
}
