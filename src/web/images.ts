import type { LivenessResult, PixelBox as PixelBoxSchema } from '../contract/faces.js';
import type { Wire } from './api.js';
import { h } from './dom.js';

export type Liveness = Wire<typeof LivenessResult>;
export type PixelBox = Wire<typeof PixelBoxSchema>;

export function livenessText(l: Liveness | undefined | null): string | null {
  if (!l) return null;
  if (l.status === 'input_rejected') return `Liveness: input rejected — ${l.reason ?? 'the image cannot be checked'}`;
  return `Liveness: ${l.is_live ? 'live' : 'not live (spoof suspected)'}, score ${l.live_score?.toFixed(3) ?? '—'}`;
}

export function livenessLine(l: Liveness | undefined | null): HTMLElement | null {
  const text = livenessText(l);
  if (!text || !l) return null;
  const cls = l.status === 'input_rejected' ? 'warn' : l.is_live ? 'ok' : 'error';
  return h('p', { class: `liveness ${cls}` }, text);
}

/**
 * Picks several images by drag and drop or the file dialog, with previews; each image has its own
 * result line so rejection reasons show next to the image they belong to.
 */
export class ImagePicker {
  readonly element: HTMLElement;
  readonly input: HTMLInputElement;
  private items: { file: File; url: string; row: HTMLElement; result: HTMLElement }[] = [];
  private readonly list: HTMLElement;

  constructor(
    label: string,
    private readonly multiple = true,
  ) {
    this.input = h('input', {
      type: 'file',
      accept: 'image/jpeg,image/png,image/webp,image/bmp',
      multiple,
      class: 'file-input',
    });
    this.input.addEventListener('change', () => {
      this.add([...(this.input.files ?? [])]);
      this.input.value = '';
    });
    this.list = h('ul', { class: 'thumbs', 'aria-label': 'Selected images' });
    const zone = h(
      'div',
      {
        class: 'dropzone',
        tabindex: '0',
        role: 'button',
        'aria-label': `${label}: drop images here or press Enter to choose`,
      },
      h('p', null, multiple ? 'Drop images here, or ' : 'Drop an image here, or '),
      h('label', { class: 'button-like' }, 'choose…', this.input),
    );
    zone.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        this.input.click();
      }
    });
    zone.addEventListener('dragover', (e) => {
      e.preventDefault();
      zone.classList.add('over');
    });
    zone.addEventListener('dragleave', () => zone.classList.remove('over'));
    zone.addEventListener('drop', (e) => {
      e.preventDefault();
      zone.classList.remove('over');
      this.add([...(e.dataTransfer?.files ?? [])].filter((f) => f.type.startsWith('image/')));
    });
    this.element = h('div', { class: 'picker' }, h('p', { class: 'picker-label' }, label), zone, this.list);
  }

  get files(): File[] {
    return this.items.map((i) => i.file);
  }

  add(files: File[]): void {
    if (!this.multiple) this.clear();
    for (const file of this.multiple ? files : files.slice(0, 1)) {
      const url = URL.createObjectURL(file);
      const result = h('div', { class: 'result' });
      const remove = h('button', { type: 'button', class: 'small', 'aria-label': `Remove ${file.name}` }, '×');
      const row = h(
        'li',
        { class: 'thumb' },
        h('img', { src: url, alt: file.name }),
        h('div', null, h('span', { class: 'name' }, file.name), result),
        remove,
      );
      const item = { file, url, row, result };
      remove.addEventListener('click', () => {
        URL.revokeObjectURL(url);
        row.remove();
        this.items = this.items.filter((i) => i !== item);
      });
      this.items.push(item);
      this.list.append(row);
    }
  }

  /** Shows the outcome for the image at `index` (the multipart order). */
  setResult(index: number, ok: boolean, text: string, liveness?: Liveness | null): void {
    const item = this.items[index];
    if (!item) return;
    const line = livenessLine(liveness);
    item.result.replaceChildren(h('p', { class: ok ? 'ok' : 'error' }, text), ...(line ? [line] : []));
    item.row.classList.toggle('rejected', !ok);
  }

  clear(): void {
    for (const i of this.items) URL.revokeObjectURL(i.url);
    this.items = [];
    this.list.replaceChildren();
  }
}

export interface DrawnFace {
  box: PixelBox;
  landmarks?: number[][] | null;
  label?: string;
  colour?: string;
}

/** The uploaded image on a canvas with its face boxes, landmarks and labels. */
export async function annotate(file: Blob, faces: DrawnFace[], alt: string): Promise<HTMLElement> {
  const url = URL.createObjectURL(file);
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const canvas = h('canvas', { class: 'annotated', role: 'img', 'aria-label': alt });
    canvas.width = img.naturalWidth;
    canvas.height = img.naturalHeight;
    const ctx = canvas.getContext('2d')!;
    ctx.drawImage(img, 0, 0);
    const unit = Math.max(2, Math.round(Math.max(img.naturalWidth, img.naturalHeight) / 300));
    ctx.font = `600 ${unit * 7}px system-ui, sans-serif`;
    for (const f of faces) {
      const colour = f.colour ?? '#3ddc97';
      ctx.strokeStyle = colour;
      ctx.fillStyle = colour;
      ctx.lineWidth = unit;
      ctx.strokeRect(f.box.x, f.box.y, f.box.width, f.box.height);
      for (const [x, y] of f.landmarks ?? []) {
        ctx.beginPath();
        ctx.arc(x!, y!, unit * 1.5, 0, Math.PI * 2);
        ctx.fill();
      }
      if (f.label) ctx.fillText(f.label, f.box.x, Math.max(unit * 7, f.box.y - unit));
    }
    return canvas;
  } finally {
    URL.revokeObjectURL(url);
  }
}
