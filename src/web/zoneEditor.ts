import type { MonitorResponse, MonitorT } from '../contract/monitors.js';
import type { MonitorTestResponse } from '../contract/settings.js';
import { api, enc, type Wire } from './api.js';
import { containRect } from './letterbox.js';
import { field, h } from './dom.js';
import { busy, messageArea, notice } from './ui.js';

type Point = [number, number];
type Kind = 'zone' | 'motion_mask' | 'face_mask';
interface Shape {
  kind: Kind;
  name: string;
  points: Point[];
  inertia?: number;
}

const STYLE: Record<Kind, { stroke: string; fill: string; label: string }> = {
  zone: { stroke: '#3ddc97', fill: 'rgba(61,220,151,0.18)', label: 'Zone' },
  motion_mask: { stroke: '#5fb3ff', fill: 'rgba(95,179,255,0.25)', label: 'Motion mask' },
  face_mask: { stroke: '#ff5c7a', fill: 'rgba(255,92,122,0.25)', label: 'Face mask' },
};

/** A click at (x, y) CSS pixels on a picture drawn letterboxed in a w x h box, in 0..1 of the frame (clamped). */
export function framePoint(x: number, y: number, box: { width: number; height: number }, frame: Point): Point {
  const r = containRect(box.width, box.height, frame[0], frame[1]);
  const clamp = (v: number) => Math.round(Math.min(1, Math.max(0, v)) * 10_000) / 10_000;
  return [clamp((x - r.x) / (r.width || 1)), clamp((y - r.y) / (r.height || 1))];
}

/** The monitor's zones and masks as the editor's shapes, and back (the PATCH body). */
export function shapesOf(m: Pick<MonitorT, 'zones' | 'motion_mask' | 'face_mask'>): Shape[] {
  return [
    ...m.zones.map((z) => ({ kind: 'zone' as const, name: z.name, points: z.polygon as Point[], inertia: z.inertia })),
    ...m.motion_mask.map((p, i) => ({
      kind: 'motion_mask' as const,
      name: `motion mask ${i + 1}`,
      points: p as Point[],
    })),
    ...m.face_mask.map((p, i) => ({ kind: 'face_mask' as const, name: `face mask ${i + 1}`, points: p as Point[] })),
  ];
}
export function patchOf(shapes: Shape[]) {
  return {
    zones: shapes
      .filter((s) => s.kind === 'zone')
      .map((s) => ({ name: s.name, polygon: s.points, ...(s.inertia ? { inertia: s.inertia } : {}) })),
    motion_mask: shapes.filter((s) => s.kind === 'motion_mask').map((s) => s.points),
    face_mask: shapes.filter((s) => s.kind === 'face_mask').map((s) => s.points),
  };
}

/**
 * Draws zones, motion masks and face masks on a still of the camera: click to add points, "Finish shape"
 * (or a click on the first point) to close one, then save (PATCH the monitor; the server validates and
 * applies them live). The still is the live preview's current picture, or a test connection's first frame.
 */
export function zoneEditor(m: MonitorT, still: () => HTMLImageElement | null, onSaved: (m: MonitorT) => void) {
  const messages = messageArea();
  const canvas = h('canvas', { class: 'zone-canvas', 'aria-label': 'Camera still: click to add points' });
  const background = document.createElement('canvas');
  let frame: Point = [16, 9];
  let shapes = shapesOf(m);
  let current: Point[] = [];
  const kind = h(
    'select',
    null,
    (Object.keys(STYLE) as Kind[]).map((k) => h('option', { value: k }, STYLE[k].label)),
  );
  const name = h('input', {
    type: 'text',
    maxlength: '32',
    placeholder: 'e.g. entrance',
    pattern: '[A-Za-z0-9][A-Za-z0-9_-]{0,31}',
  });
  const list = h('ul', { class: 'plain zone-list', 'data-testid': 'zone-list' });

  const draw = () => {
    const ratio = window.devicePixelRatio || 1;
    const w = canvas.clientWidth,
      hgt = canvas.clientHeight;
    canvas.width = Math.round(w * ratio);
    canvas.height = Math.round(hgt * ratio);
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, w, hgt);
    const r = containRect(w, hgt, frame[0], frame[1]);
    if (background.width) ctx.drawImage(background, r.x, r.y, r.width, r.height);
    const px = ([x, y]: Point): Point => [r.x + x * r.width, r.y + y * r.height];
    const path = (pts: Point[], close: boolean) => {
      ctx.beginPath();
      pts.map(px).forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
      if (close) ctx.closePath();
    };
    for (const s of shapes) {
      path(s.points, true);
      ctx.fillStyle = STYLE[s.kind].fill;
      ctx.fill();
      ctx.strokeStyle = STYLE[s.kind].stroke;
      ctx.lineWidth = 2;
      ctx.stroke();
      if (s.kind === 'zone') {
        const [x, y] = px(s.points[0]!);
        ctx.fillStyle = STYLE.zone.stroke;
        ctx.font = '600 13px system-ui, sans-serif';
        ctx.fillText(s.name, x + 4, y + 14);
      }
    }
    if (current.length) {
      path(current, false);
      ctx.strokeStyle = STYLE[kind.value as Kind].stroke;
      ctx.setLineDash([6, 4]);
      ctx.stroke();
      ctx.setLineDash([]);
      for (const p of current.map(px)) {
        ctx.beginPath();
        ctx.arc(p[0], p[1], 4, 0, Math.PI * 2);
        ctx.fillStyle = STYLE[kind.value as Kind].stroke;
        ctx.fill();
      }
    }
    canvas.dataset.shapes = String(shapes.length);
    canvas.dataset.points = String(current.length);
  };

  const renderList = () => {
    list.replaceChildren(
      ...shapes.map((s, i) => {
        const del = h('button', { type: 'button', class: 'small danger' }, 'Remove');
        del.addEventListener('click', () => {
          shapes.splice(i, 1);
          renderList();
          draw();
        });
        return h('li', null, h('span', { class: STYLE[s.kind].label }, `${STYLE[s.kind].label}: ${s.name} `), del);
      }),
    );
    if (!shapes.length) list.append(h('li', { class: 'muted' }, 'No zones or masks yet.'));
  };

  const finish = () => {
    if (current.length < 3) return messages.show(notice('A shape needs at least 3 points.', 'warn'));
    const k = kind.value as Kind;
    const n = name.value.trim();
    if (k === 'zone' && !n) return messages.show(notice('Name the zone first (letters, digits, _ and -).', 'warn'));
    shapes.push({
      kind: k,
      name: k === 'zone' ? n : `${STYLE[k].label.toLowerCase()} ${shapes.filter((s) => s.kind === k).length + 1}`,
      points: current,
    });
    current = [];
    name.value = '';
    messages.clear();
    renderList();
    draw();
  };

  canvas.addEventListener('click', (e) => {
    const p = framePoint(e.offsetX, e.offsetY, { width: canvas.clientWidth, height: canvas.clientHeight }, frame);
    // A click near the first point closes the shape.
    const first = current[0];
    const r = containRect(canvas.clientWidth, canvas.clientHeight, frame[0], frame[1]);
    if (first && current.length >= 3 && Math.hypot((first[0] - p[0]) * r.width, (first[1] - p[1]) * r.height) < 10)
      return finish();
    current.push(p);
    draw();
  });
  new ResizeObserver(draw).observe(canvas);

  const setStill = (
    img: CanvasImageSource & { naturalWidth?: number; naturalHeight?: number; width: number; height: number },
  ) => {
    const w = img.naturalWidth || img.width,
      hh = img.naturalHeight || img.height;
    if (!w || !hh) return;
    frame = [w, hh];
    background.width = w;
    background.height = hh;
    background.getContext('2d')!.drawImage(img, 0, 0);
    canvas.style.aspectRatio = `${w} / ${hh}`;
    draw();
  };
  const snapshot = h('button', { type: 'button', class: 'secondary' }, 'Take a still');
  snapshot.addEventListener(
    'click',
    () =>
      void busy(snapshot, messages, async () => {
        const live = still();
        if (live?.naturalWidth) return setStill(live);
        // No live picture: a connection test gives the camera's first frame.
        const r = await api<Wire<typeof MonitorTestResponse>>('POST', `/v1/monitors/${enc(m.id)}/test`, {});
        if (!r.test.snapshot) throw new Error(r.test.message);
        const img = new Image();
        img.src = `data:${r.test.snapshot.content_type};base64,${r.test.snapshot.data_base64}`;
        await img.decode();
        setStill(img);
      }),
  );
  const finishButton = h('button', { type: 'button', class: 'small' }, 'Finish shape');
  finishButton.addEventListener('click', finish);
  const undo = h('button', { type: 'button', class: 'small' }, 'Undo point');
  undo.addEventListener('click', () => {
    current.pop();
    draw();
  });
  const save = h('button', { type: 'button' }, 'Save zones and masks');
  save.addEventListener(
    'click',
    () =>
      void busy(save, messages, async () => {
        const r = await api<Wire<typeof MonitorResponse>>('PATCH', `/v1/monitors/${enc(m.id)}`, patchOf(shapes));
        shapes = shapesOf(r.monitor);
        renderList();
        draw();
        messages.show(notice('Saved: the camera uses them now.'));
        onSaved(r.monitor);
      }),
  );
  renderList();
  return h(
    'section',
    { class: 'card zone-editor', 'aria-labelledby': 'zones-h' },
    h('h2', { id: 'zones-h' }, 'Zones and masks'),
    h(
      'p',
      { class: 'muted' },
      'Zones name areas that events report (and raise zone_enter); motion masks hide movement that should not wake the detector (trees, a screen); face masks ignore faces there (a poster).',
    ),
    h('div', { class: 'actions' }, snapshot),
    canvas,
    h(
      'div',
      { class: 'filters' },
      field('Draw', kind),
      field('Zone name', name),
      h('div', { class: 'actions' }, undo, finishButton),
    ),
    list,
    h('div', { class: 'actions' }, save),
    messages,
  );
}
