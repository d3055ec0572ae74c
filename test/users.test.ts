import t from 'tap';
import { uniq } from './helpers/api.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);

t.test('users - GET /users lists members with their roles', async (t) => {
  const { members } = await maria.ok('GET', '/users');
  const byEmail = new Map(members.map((m: any) => [m.email, m]));
  const o: any = byEmail.get(s.demo.owner.email);
  t.equal(o.role, 100);
  t.equal(o.is_owner, true);
  t.equal(o.is_admin, true);
  t.equal((byEmail.get(s.demo.admin.email) as any).role, 200);
  const bot: any = byEmail.get(s.demo.bot.email);
  t.equal(bot.is_bot, true);
  t.equal(bot.bot_type, 1);
  t.equal(bot.bot_owner_id, s.demo.owner.userId);
  t.equal(o.avatar_url, null, 'client_extavatar defaults to true');
  const withAvatars = await maria.ok('GET', '/users', { client_extavatar: false, user_ids: [s.demo.owner.userId] });
  t.equal(withAvatars.members.length, 1);
  t.match(withAvatars.members[0].avatar_url, /^https:\/\//);
  t.equal((await maria.get('/users', { user_ids: [99999999] })).status, 400);
});

t.test('users - POST /users: owners with can_create_users; others are refused', async (t) => {
  const email = `${uniq('new')}@parley.example`;
  const created = await owner.ok('POST', '/users', { email, password: 'correct horse', full_name: 'New Person' });
  t.type(created.user_id, 'number');
  const listed = (await maria.ok('GET', '/users')).members.find((m: any) => m.user_id === created.user_id);
  t.equal(listed.email, email);
  t.equal(listed.role, 400);
  const dup = await owner.post('/users', { email, password: 'x', full_name: 'Again' });
  t.equal(dup.status, 400);
  t.match(dup.body.msg, /already in use/);
  const member = await maria.post('/users', { email: `${uniq('m')}@parley.example`, password: 'x', full_name: 'X' });
  t.equal(member.status, 400);
  t.equal(member.body.code, 'UNAUTHORIZED_PRINCIPAL');
  const noPerm = await admin.post('/users', { email: `${uniq('a')}@parley.example`, password: 'x', full_name: 'X' });
  t.equal(noPerm.status, 400);
  t.match(noPerm.body.msg, /not authorized to create users/);
  const badEmail = await owner.post('/users', { email: 'not-an-email', password: 'x', full_name: 'X' });
  t.equal(badEmail.status, 400);
  t.match(badEmail.body.msg, /Invalid email/);
  t.match((await owner.post('/users', { email: `${uniq('b')}@parley.example`, password: 'x' })).body.msg, /Missing 'full_name'/);
});
