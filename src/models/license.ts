/**
 * Licence gate: the pack's licence notices are shown before anything is downloaded, and the install
 * proceeds only on explicit acceptance (flag, or an interactive yes on a terminal).
 */
import { createInterface } from 'node:readline';
import { Errors } from '../contract/errors.js';
import type { LicenseEntry } from './catalog.js';

export interface OutStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

export type InStream = NodeJS.ReadableStream & { isTTY?: boolean };

export interface LicenseGate {
  packId: string;
  licenses: (LicenseEntry & { files: string[] })[];
  acceptLicense: boolean;
  stdin: InStream;
  stdout: OutStream;
  stderr: OutStream;
}

export function formatLicenseNotices(packId: string, licenses: (LicenseEntry & { files: string[] })[]): string {
  const blocks = licenses.map((l) =>
    [
      `  ${l.name}`,
      `    files:          ${l.files.join(', ')}`,
      `    url:            ${l.url}`,
      `    commercial use: ${l.commercial_use ? 'yes' : 'no'}`,
      `    ${l.notice}`,
    ].join('\n'),
  );
  return `Model pack "${packId}" is covered by these licences:\n${blocks.join('\n\n')}\n`;
}

export async function confirmLicense(gate: LicenseGate): Promise<void> {
  gate.stderr.write(formatLicenseNotices(gate.packId, gate.licenses));
  if (gate.acceptLicense) {
    gate.stderr.write('Licence terms accepted (--accept-license).\n');
    return;
  }
  // Only ask a person; a script without the flag must fail rather than hang or assume consent.
  if (gate.stdin.isTTY && gate.stdout.isTTY && (await askYesNo(gate, 'Accept these licence terms? [y/N] '))) return;
  throw Errors.licenseNotAccepted(
    gate.packId,
    gate.licenses.map((l) => l.id),
  );
}

async function askYesNo(gate: LicenseGate, prompt: string): Promise<boolean> {
  const rl = createInterface({ input: gate.stdin, terminal: false });
  gate.stderr.write(prompt);
  try {
    // The first line is the answer; stdin closing before one counts as "no".
    const answer = await new Promise<string>((resolve) => {
      rl.once('line', resolve);
      rl.once('close', () => resolve(''));
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
