// views/auth.js: the sign-up and login forms, with inline validation that
// mirrors the server's rules (usernames 1–32 of A–Z a–z 0–9 _ . -,
// passwords 8–256 bytes) and the server's own answers shown beside the
// field they concern.

import * as api from '../api.js';
import {h, field, fieldError, formError} from '../dom.js';

const NAME_RE = /^[A-Za-z0-9_.-]{1,32}$/;
const utf8Len = (s) => new TextEncoder().encode(s).length;

// checkUsername returns what is wrong with a username, or ''.
export function checkUsername(v) {
  if (!v) return 'Choose a username.';
  if (v.length > 32) return 'At most 32 characters.';
  if (!NAME_RE.test(v)) return 'Only letters, digits, "_", "." and "-".';
  return '';
}

// checkPassword returns what is wrong with a password, or ''.
export function checkPassword(v) {
  const n = utf8Len(v);
  if (n < 8) return 'At least 8 characters.';
  if (n > 256) return 'At most 256 bytes.';
  return '';
}

export function authView(main, ctx, mode) {
  const signup = mode === 'signup';
  const user = field('Username', {name: 'username', autocomplete: 'username', autocapitalize: 'none',
    spellcheck: false, required: true, maxlength: 64});
  const pass = field('Password', {name: 'password', type: 'password', required: true,
    autocomplete: signup ? 'new-password' : 'current-password'});
  const again = signup ? field('Repeat password', {name: 'password2', type: 'password', autocomplete: 'new-password'}) : null;
  const submit = h('button', {type: 'submit', class: 'primary'}, signup ? 'Create account' : 'Log in');

  const checks = [
    [user.input, () => checkUsername(user.input.value)],
    [pass.input, () => (signup ? checkPassword(pass.input.value) : (pass.input.value ? '' : 'Enter your password.'))],
  ];
  if (again) checks.push([again.input, () => (again.input.value === pass.input.value ? '' : 'The passwords differ.')]);
  const touched = new Set();
  const validate = (all) => {
    let ok = true;
    for (const [input, check] of checks) {
      const msg = check();
      if (msg) ok = false;
      if (all || touched.has(input)) fieldError(input, msg);
    }
    return ok;
  };
  for (const [input] of checks) {
    input.addEventListener('blur', () => { if (input.value) touched.add(input); validate(false); });
    input.addEventListener('input', () => validate(false));
  }

  const form = h('form', {class: 'card auth', novalidate: true}, h('h1', {}, signup ? 'Create an account' : 'Log in'),
    user.el, pass.el, again && again.el, submit,
    h('p', {class: 'muted'}, signup ? ['Have an account? ', h('a', {href: '#/login'}, 'Log in')]
      : ['New here? ', h('a', {href: '#/signup'}, 'Create an account')]));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formError(form, '');
    if (!validate(true)) return;
    submit.disabled = true;
    const name = user.input.value, pw = pass.input.value;
    try {
      if (signup) await api.register(name, pw);
      await api.login(name, pw);
      ctx.go('#/rooms');
    } catch (err) {
      showServerError(form, user.input, err);
    } finally {
      submit.disabled = false;
    }
  });
  main.append(form);
  user.input.focus();
}

// showServerError puts an API error beside the field it is about.
function showServerError(form, userInput, err) {
  if (err.status === 409) fieldError(userInput, 'That name is taken.');
  else if (err.status === 401) formError(form, 'Wrong username or password.');
  else if (err.status === 429) formError(form, 'Too many attempts; wait a minute and try again.');
  else if (err.status === 403) formError(form, 'Registration is closed on this cluster; ask an admin for an account.');
  else formError(form, err.message);
}
