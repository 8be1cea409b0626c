// views/files.js: files in rooms. A message's files are shown under its
// text: images of the server's inline list as thumbnails, anything else as
// a button that downloads it with its name and size. The composer takes
// files from its attach button, a drop anywhere on the room or a paste
// into the input, uploads each at once with a progress bar (XHR reports
// upload progress; fetch does not), and the next send posts them.
//
// The file routes need the session's Authorization header, which an <img>
// or a link cannot send: files are fetched with it and shown from blob:
// URLs. Everything is built with DOM nodes; names are text, never markup.

import * as api from '../api.js';
import * as nodes from '../nodes.js';
import {h, replace, svg} from '../dom.js';

// INLINE are the media types shown as images (the server serves these
// inline and every other type, SVG included, as an attachment).
const INLINE = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];

// fileIcon draws a sheet of paper, clipIcon a paper clip, as inline SVG
// in the text's colour (icons.js draws the app's other icons alike).
function fileIcon(label = 'File') { return icon('file', label, 'M4 1.5h5l3 3v10H4zM9 1.5v3h3'); }
function clipIcon(label = 'Attach files') { return icon('clip', label, 'M10.5 4.5l-5 5a1.4 1.4 0 0 0 2 2l5.5-5.5a2.8 2.8 0 0 0-4-4L3.5 7.5a4.2 4.2 0 0 0 6 6l4-4'); }
function icon(cls, label, d) {
  return svg('svg', {class: 'icon ' + cls, viewBox: '0 0 16 16', width: 16, height: 16, role: 'img', 'aria-label': label, focusable: 'false'},
    svg('title', {}, label), svg('path', {d, fill: 'none', stroke: 'currentColor', 'stroke-width': '1.5', 'stroke-linecap': 'round', 'stroke-linejoin': 'round'}));
}

// blobs caches each file's blob: URL by id, so a message drawn again
// does not fetch its files again.
const blobs = new Map();

// fileSize renders a byte count for people.
export function fileSize(n) {
  if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + ' MB';
  if (n >= 1 << 10) return Math.round(n / (1 << 10)) + ' KB';
  return n + ' B';
}

function blobURL(f) {
  if (!blobs.has(f.id)) {
    const p = api.request('GET', f.url, {bytes: true})
      .then((r) => URL.createObjectURL(new Blob([r.bytes], {type: f.content_type})));
    p.catch(() => blobs.delete(f.id)); // fetch again next time
    blobs.set(f.id, p);
  }
  return blobs.get(f.id);
}

// download saves file f under its name.
async function download(f, button) {
  button.disabled = true;
  try {
    const url = await blobURL(f);
    const a = h('a', {href: url, download: f.name, hidden: true});
    document.body.append(a);
    a.click();
    a.remove();
  } catch (e) {
    button.title = 'Download failed: ' + e.message;
  } finally {
    button.disabled = false;
  }
}

// fileButton is a file that is not shown inline: its name and size, a
// click downloads it.
function fileButton(f) {
  const b = h('button', {type: 'button', class: 'file-chip', title: `Download ${f.name} (${f.content_type})`},
    fileIcon(f.content_type),
    h('span', {class: 'file-name'}, f.name), h('span', {class: 'file-size'}, fileSize(f.size)));
  b.addEventListener('click', () => download(f, b));
  return b;
}

// thumbnail is an image shown inline; a click opens it at full size.
function thumbnail(f) {
  const img = h('img', {alt: f.name, title: `${f.name} · ${fileSize(f.size)}`, decoding: 'async'});
  const link = h('a', {class: 'file-image loading', href: '#', target: '_blank', rel: 'noopener'}, img);
  link.addEventListener('click', (e) => { if (!img.src) e.preventDefault(); });
  blobURL(f).then((url) => {
    img.src = url;
    link.href = url;
    link.classList.remove('loading');
  }, () => link.replaceWith(fileButton(f)));
  return link;
}

// attachments shows a message's files, or null when it has none.
export function attachments(ev) {
  if (!ev.files || !ev.files.length || ev.deleted) return null;
  return h('div', {class: 'files'}, ev.files.map((f) => (INLINE.includes(f.content_type) ? thumbnail(f) : fileButton(f))));
}

// upload sends file to room with XHR, reporting progress (0 to 1), and
// resolves to the stored file.
function upload(room, file, name, progress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const path = `/api/v1/rooms/${encodeURIComponent(room)}/files?name=${encodeURIComponent(name)}`;
    xhr.open('POST', nodes.current() + path);
    const s = api.session();
    if (s) xhr.setRequestHeader('Authorization', 'Bearer ' + s.token);
    xhr.setRequestHeader('Content-Type', file.type || 'application/octet-stream');
    xhr.setRequestHeader('Idempotency-Key', api.requestId());
    xhr.upload.addEventListener('progress', (e) => { if (e.lengthComputable) progress(e.loaded / e.total); });
    xhr.addEventListener('load', () => {
      let data = null;
      try { data = JSON.parse(xhr.responseText); } catch (e) { /* not JSON */ }
      if (xhr.status === 201 && data) resolve(data);
      else reject(new Error((data && data.error && data.error.message) || `upload failed (${xhr.status})`));
    });
    xhr.addEventListener('error', () => reject(new Error('Cannot reach the server')));
    xhr.send(file);
  });
}

// pastedName names a pasted file that has none ("image.png" from most
// browsers, "" from some).
function pastedName(file) {
  if (file.name) return file.name;
  const ext = (file.type.split('/')[1] || 'bin').replace(/[^a-z0-9]/g, '');
  return 'pasted.' + ext;
}

// composer returns the composer's file parts for room view v: the attach
// button, the tray of files being uploaded, listen (drop and paste
// targets), count, and post, which waits for the uploads and posts them
// with text.
export function composer(v) {
  const pending = []; // {chip, done: Promise<file info>, info, error}
  const picker = h('input', {type: 'file', multiple: true, hidden: true, 'aria-hidden': 'true', tabindex: '-1'});
  const button = h('button', {type: 'button', class: 'attach', title: 'Attach files (or drop or paste them here)'}, clipIcon());
  const tray = h('div', {class: 'file-tray', hidden: true});
  const sync = () => { tray.hidden = pending.length === 0; };
  button.addEventListener('click', () => picker.click());
  picker.addEventListener('change', () => { add([...picker.files]); picker.value = ''; });

  function add(files) {
    for (const file of files) {
      const name = pastedName(file);
      const bar = h('progress', {max: 1, value: 0, 'aria-label': 'Uploading ' + name});
      const status = h('span', {class: 'file-size'}, fileSize(file.size));
      const remove = h('button', {type: 'button', class: 'file-remove', 'aria-label': 'Remove ' + name, title: 'Remove'}, '×');
      // An image shows a small preview of itself, read from the file, not
      // the server.
      const preview = INLINE.includes(file.type) ? h('img', {class: 'file-preview', alt: '', src: URL.createObjectURL(file)}) : fileIcon(file.type || 'File');
      const chip = h('div', {class: 'file-chip uploading'}, preview,
        h('span', {class: 'file-name'}, name), status, bar, remove);
      const p = {chip};
      p.done = upload(v.room, file, name, (x) => { bar.value = x; }).then((info) => {
        p.info = info;
        chip.classList.remove('uploading');
        bar.remove();
        return info;
      }, (e) => {
        p.error = e.message;
        chip.classList.add('failed');
        bar.remove();
        replace(status, e.message);
        throw e;
      });
      p.done.catch(() => {}); // reported by post
      p.drop = () => { if (preview.src) URL.revokeObjectURL(preview.src); chip.remove(); };
      remove.addEventListener('click', () => { pending.splice(pending.indexOf(p), 1); p.drop(); sync(); });
      pending.push(p);
      tray.append(chip);
    }
    sync();
  }

  function listen(roomEl) {
    roomEl.addEventListener('dragover', (e) => {
      if (![...e.dataTransfer.types].includes('Files')) return;
      e.preventDefault();
      roomEl.classList.add('dropping');
    });
    roomEl.addEventListener('dragleave', (e) => { if (!roomEl.contains(e.relatedTarget)) roomEl.classList.remove('dropping'); });
    roomEl.addEventListener('drop', (e) => {
      roomEl.classList.remove('dropping');
      if (!e.dataTransfer.files.length) return;
      e.preventDefault();
      add([...e.dataTransfer.files]);
    });
    v.input.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData ? e.clipboardData.files : [])];
      if (!files.length) return;
      e.preventDefault();
      add(files);
    });
  }

  // post waits for every upload, then posts text (to: a whisper) with
  // the files; the tray empties once it is sent. It answers the post's
  // result with the files.
  async function post(text, to) {
    await Promise.allSettled(pending.map((p) => p.done));
    const failed = pending.find((p) => p.error);
    if (failed) throw new Error(`${failed.error} — remove the file to send the rest`);
    const files = pending.map((p) => p.info);
    const r = await api.request('POST', `/api/v1/rooms/${encodeURIComponent(v.room)}/messages`,
      {body: {text, to: to.length ? to : undefined, files: files.map((f) => f.id)}, idem: api.requestId()});
    for (const p of pending.splice(0)) p.drop();
    sync();
    return {...r, files};
  }

  return {button, picker, tray, listen, post, count: () => pending.length, add};
}
