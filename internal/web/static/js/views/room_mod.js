// views/room_mod.js: what the room view shows its owner and moderators: the
// settings panel (topic, description, announcement room, slow mode, member
// limit, who may join, retention, legal hold, invitations, incoming and
// outgoing webhooks) and each member's moderation actions
// (mute, kick, ban, and for the owner the moderator role). Every rule is
// the server's; this only offers the buttons a role can use and shows the
// server's answer. Text from users is set as text, never parsed.

import * as api from '../api.js';
import {h, replace, field, fieldError, formError, clearErrors} from '../dom.js';
import {copyButton} from './links.js';
import {outHooksSection} from './room_outhooks.js';

// MUTE_S is how long the members panel's mute lasts.
const MUTE_S = 10 * 60;

// canModerate reports whether my role lets me moderate the room.
export const canModerate = (v) => v.role === 'owner' || v.role === 'moderator';

// settingsPanel returns the settings form of the room view, hidden until
// the Settings button opens it; fill shows the room's current settings.
export function settingsPanel(v) {
  const topic = field('Topic', {name: 'topic', maxlength: 256});
  const description = field('Description', {name: 'description', maxlength: 2048, rows: 2}, 'textarea');
  const announcement = h('input', {type: 'checkbox', name: 'announcement'});
  const slow = field('Slow mode: seconds between two posts of a member (0: off)', {name: 'slow_mode', type: 'number', min: 0, max: 86400});
  const max = field('Member limit', {name: 'max_members', type: 'number', min: 1});
  const access = h('select', {name: 'access', 'aria-label': 'Who may join'},
    h('option', {value: 'public'}, 'Anyone (public)'),
    h('option', {value: 'password'}, 'With the password or an invitation'),
    h('option', {value: 'invite'}, 'By invitation only'));
  const password = field('New password (for "with the password")', {name: 'password', type: 'password', autocomplete: 'new-password'});
  const days = field('Keep history for days (0: the cluster default, -1: for ever)', {name: 'retention_days', type: 'number', min: -1, max: 36500});
  const count = field('Keep only the newest messages (0: no limit)', {name: 'retention_messages', type: 'number', min: -1, max: 100000000});
  const ownerOnly = h('fieldset', {class: 'owner-only stack'},
    h('label', {class: 'check'}, announcement, ' Announcement room: only the owner and moderators post'),
    slow.el, max.el, h('label', {class: 'field'}, h('span', {class: 'label'}, 'Who may join'), access), password.el,
    days.el, count.el);
  const hold = legalHoldSection(v, (info) => fill(info));
  const form = h('form', {class: 'room-settings stack', hidden: true, 'aria-label': 'Room settings'},
    h('h2', {}, 'Room settings'), topic.el, description.el, ownerOnly, hold.el,
    h('div', {class: 'row'}, h('button', {type: 'submit', class: 'primary'}, 'Save'),
      h('button', {type: 'button', class: 'link-button', onclick: () => { form.hidden = true; }}, 'Close')));
  const inviteName = field('Invite a user', {name: 'invitee', autocomplete: 'off', placeholder: 'username'});
  const inviteForm = h('form', {class: 'invite row'}, inviteName.el, h('button', {type: 'submit'}, 'Invite'));
  form.append(inviteForm);
  const hooks = hooksSection(v);
  form.append(hooks.el);
  const outHooks = outHooksSection(v);
  form.append(outHooks.el);

  const fill = (info) => {
    topic.input.value = info.topic || '';
    description.input.value = info.description || '';
    announcement.checked = !!info.announcement;
    slow.input.value = String(info.slow_mode || 0);
    max.input.value = String(info.max_members);
    access.value = info.invite_only ? 'invite' : info.private ? 'password' : 'public';
    password.input.value = '';
    days.input.value = String(info.retention_days || 0);
    count.input.value = String(info.retention_messages || 0);
    hold.fill(info);
    ownerOnly.disabled = v.role !== 'owner';
    inviteForm.hidden = !info.private;
    hooks.el.hidden = v.role !== 'owner';
    outHooks.el.hidden = v.role !== 'owner';
    if (v.role === 'owner') { hooks.refresh(); outHooks.refresh(); }
  };
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const info = v.info || {};
    const patch = {};
    if (topic.input.value !== (info.topic || '')) patch.topic = topic.input.value;
    if (description.input.value !== (info.description || '')) patch.description = description.input.value;
    if (v.role === 'owner') {
      if (announcement.checked !== !!info.announcement) patch.announcement = announcement.checked;
      if (Number(slow.input.value) !== (info.slow_mode || 0)) patch.slow_mode = Number(slow.input.value);
      if (Number(max.input.value) !== info.max_members) patch.max_members = Number(max.input.value);
      if (Number(days.input.value) !== (info.retention_days || 0)) patch.retention_days = Number(days.input.value);
      if (Number(count.input.value) !== (info.retention_messages || 0)) patch.retention_messages = Number(count.input.value);
      const was = info.invite_only ? 'invite' : info.private ? 'password' : 'public';
      if (access.value !== was || password.input.value) patch.access = access.value;
      if (access.value === 'password' && patch.access) {
        if (!password.input.value && was !== 'password') { fieldError(password.input, 'Give the room a password.'); return; }
        if (password.input.value) patch.password = password.input.value; else delete patch.access;
      }
    }
    if (!Object.keys(patch).length) { formError(form, 'Nothing changed.'); return; }
    try {
      v.info = await api.updateRoom(v.room, patch);
      clearErrors(form);
      fill(v.info);
      v.ctx.notify('Settings saved.', 'info');
    } catch (err) {
      formError(form, err.message);
    }
  });
  inviteForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    e.stopPropagation();
    const name = inviteName.input.value.trim();
    if (!name) { fieldError(inviteName.input, 'Name the user to invite.'); return; }
    try {
      await api.invite(v.room, name);
      inviteName.input.value = '';
      v.ctx.notify(`Invited ${name}: they can join without the password.`, 'info');
    } catch (err) {
      fieldError(inviteName.input, err.message);
    }
  });
  return {form, fill};
}

// legalHoldSection is the legal hold's part of the settings panel: whether
// the room is held, and a button to place or lift the hold. Only admins
// may (the web app does not know who is one: the server answers others
// with its refusal, shown here); refill shows the room after a change.
function legalHoldSection(v, refill) {
  const status = h('p', {class: 'legal-hold-status'});
  const button = h('button', {type: 'button', class: 'legal-hold-toggle'});
  const error = h('p', {class: 'form-error', role: 'alert', hidden: true});
  const el = h('fieldset', {class: 'legal-hold stack'}, h('legend', {}, 'Legal hold'), status, h('div', {class: 'row'}, button), error);
  let held = false;
  const fill = (info) => {
    held = !!info.legal_hold;
    replace(status, held ? 'This room is under legal hold: nothing of its history is deleted, and its messages cannot be edited or deleted.'
      : 'Not held: the room\'s retention applies.');
    replace(button, held ? 'Lift the legal hold (admins)' : 'Place a legal hold (admins)');
    error.hidden = true;
  };
  button.addEventListener('click', async () => {
    try {
      v.info = await api.legalHold(v.room, !held);
      refill(v.info);
      showRules(v);
      v.ctx.notify(v.info.legal_hold ? 'Legal hold placed.' : 'Legal hold lifted.', 'info');
    } catch (err) {
      replace(error, err.message);
      error.hidden = false;
    }
  });
  return {el, fill};
}

// hooksSection is the owner's part of the settings panel for incoming
// webhooks: make one (its URL, which holds the secret, shown once with a
// copy button), and list and revoke the room's.
function hooksSection(v) {
  const name = field('Bot name', {name: 'hook_name', maxlength: 64, autocomplete: 'off', placeholder: 'deploy bot'});
  const result = h('div', {class: 'hook-result', 'aria-live': 'polite'});
  const list = h('div', {class: 'hooks-list'});
  const create = h('form', {class: 'row hook-create'}, name.el, h('button', {type: 'submit'}, 'Make webhook'));
  const el = h('fieldset', {class: 'hooks stack', hidden: true},
    h('legend', {}, 'Incoming webhooks'),
    h('p', {class: 'muted'}, 'POST {"text": "..."} (or Slack\'s {"text", "username"}) to the URL to post here as a bot.'),
    create, result, list);
  const refresh = async () => {
    try {
      const hs = await api.hooks(v.room);
      replace(list, hs.length ? h('ul', {class: 'plain'}, hs.map((hk) => h('li', {class: 'row', 'data-id': hk.id},
        h('span', {}, hk.name), h('span', {class: 'muted'}, hk.id),
        h('button', {type: 'button', class: 'link-button danger revoke-hook', onclick: async () => {
          try { await api.revokeHook(v.room, hk.id); v.ctx.notify(`Webhook "${hk.name}" revoked.`, 'info'); refresh(); } catch (e) { v.ctx.notify(e.message, 'error'); }
        }}, 'Revoke')))) : h('p', {class: 'muted'}, 'No webhooks.'));
    } catch (e) {
      replace(list, h('p', {class: 'form-error'}, 'Cannot load the webhooks: ' + e.message));
    }
  };
  create.addEventListener('submit', async (e) => {
    e.preventDefault();
    e.stopPropagation();
    const n = name.input.value.trim();
    fieldError(name.input, n ? '' : 'Name the bot its posts show.');
    if (!n) return;
    try {
      const hk = await api.createHook(v.room, n);
      name.input.value = '';
      replace(result, h('div', {class: 'token-secret'},
        h('p', {}, h('strong', {}, 'Copy this URL now: it holds the secret and is shown only once.')),
        h('code', {class: 'secret hook-url'}, hk.url), ' ', copyButton(hk.url)));
      refresh();
    } catch (err) {
      fieldError(name.input, err.message);
    }
  });
  return {el, refresh};
}

// memberActions returns the moderation buttons for member m, or null when
// my role gives me none over them: moderators act on members, the owner on
// moderators too, nobody on the owner or themself.
export function memberActions(v, m) {
  const mine = m.username.toLowerCase() === v.me.toLowerCase();
  if (!canModerate(v) || mine || m.role === 'owner' || (m.role === 'moderator' && v.role !== 'owner')) return null;
  const run = async (what, fn) => {
    try { await fn(); } catch (e) { v.ctx.notify(`Cannot ${what} ${m.username}: ${e.message}`, 'error'); }
  };
  const reason = (what) => {
    const r = prompt(`Why ${what} ${m.username}? (optional, shown in the room)`);
    return r === null ? null : {reason: r.trim() || undefined};
  };
  const b = (label, cls, fn) => h('button', {type: 'button', class: 'link-button mod-action ' + cls, title: `${label} ${m.username}`, onclick: fn}, label);
  const sanction = (what, action, extra) => () => {
    const body = reason(what);
    if (body) run(what, () => api.moderate(v.room, m.username, action, {...body, ...extra}));
  };
  return h('span', {class: 'mod-actions'},
    v.role === 'owner' ? b(m.role === 'moderator' ? 'Unmod' : 'Mod', 'mod-role',
      () => run('change the role of', () => api.setRole(v.room, m.username, m.role === 'moderator' ? 'member' : 'moderator'))) : null,
    b('Mute', 'mod-mute', sanction('mute', 'mute', {duration: MUTE_S})),
    b('Kick', 'mod-kick', sanction('remove', 'kick', {})),
    b('Ban', 'mod-ban', sanction('ban', 'ban', {})));
}

// roleTag is the small label after a member's name.
export function roleTag(m) {
  return m.role && m.role !== 'member' ? h('span', {class: 'role-tag role-' + m.role}, m.role === 'owner' ? 'owner' : 'mod') : null;
}

// showRules tells a member who may not post why, in place of the composer.
export function showRules(v) {
  const info = v.info || {};
  const readOnly = info.announcement && !canModerate(v);
  v.form.hidden = readOnly;
  const notes = [];
  if (readOnly) notes.push('This is an announcement room: only its owner and moderators post.');
  else if (info.slow_mode && !canModerate(v)) notes.push(`Slow mode: one post every ${info.slow_mode} s.`);
  if (info.legal_hold) notes.push('This room is under legal hold: its history is kept, and messages cannot be edited or deleted.');
  v.rules.hidden = !notes.length;
  replace(v.rules, notes.join(' '));
  replace(v.topic, info.topic || '');
  v.topic.hidden = !info.topic;
  v.settingsButton.hidden = !canModerate(v);
}
