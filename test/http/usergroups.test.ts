import t from 'tap';
import { dataOf, directoryFixture, expectError, outcome, type ItemResult } from '../helpers/directory.js';

const ORG = 'org-groups';

t.test('user groups are added once each, duplicates and existing groups failing per item', async (t) => {
  const fx = await directoryFixture(t);
  const added = dataOf(
    t,
    await fx.call<Record<string, ItemResult>>('/v2/organizations/usergroups/add', {
      organizationId: ORG,
      organizationUserGroups: [{ groupId: 'eng', groupName: 'Engineering' }, { groupId: 'ops' }, { groupId: 'x' }, { groupId: 'x' }],
    }),
  );
  t.same(outcome(added), { ok: ['eng', 'ops'], failed: ['x'] });
  const again = dataOf(t, await fx.call<Record<string, ItemResult>>('/v1/organizations/usergroups/add', { organizationId: ORG, organizationUserGroups: [{ groupId: 'eng' }] }));
  t.equal(again['eng']?.code, 'already-exists');
});

t.test('users are added to a group (4.17) and removed by userIds alone or deleteAll alone (4.12)', async (t) => {
  const fx = await directoryFixture(t);
  await fx.call('/v2/organizations/usergroups/add', { organizationId: ORG, organizationUserGroups: [{ groupId: 'eng' }] });
  const add = (userIds: string[]) =>
    fx.call<Record<string, ItemResult>>('/v1/organizations/usergroups/users/add', { organizationId: ORG, organizationUserGroupId: 'eng', userIds });
  const added = dataOf(t, await add(['u1', 'u2', 'u3', 'u4', 'dup', 'dup']));
  t.same(outcome(added), { ok: ['u1', 'u2', 'u3', 'u4'], failed: ['dup'] });
  t.same(added['u1'], { success: true, organizationUserGroupId: 'eng', message: 'User added to the group.' });
  t.equal(dataOf(t, await add(['u1']))['u1']?.success, true, 'adding a member again is not an error');
  const members = async () =>
    dataOf(t, await fx.call<Array<{ userId: string }>>('/v2/users/get', { organizationId: ORG, organizationUserGroupIds: ['eng'] }));
  await fx.call('/v2/users/add', { organizationId: ORG, users: ['u1', 'u2', 'u3', 'u4', 'outsider'].map((userId) => ({ userId })) });
  t.same((await members()).map((u) => u.userId), ['u1', 'u2', 'u3', 'u4'], 'Get Users filters by group');

  const remove = (data: Record<string, unknown>) =>
    fx.call<Record<string, ItemResult>>('/v1/organizations/usergroups/users/delete', { organizationId: ORG, organizationUserGroupId: 'eng', ...data });
  const removed = dataOf(t, await remove({ userIds: ['u1', 'stranger'] }));
  t.same(outcome(removed), { ok: ['u1'], failed: ['stranger'] });
  t.same(removed['stranger'], { success: false, organizationUserGroupId: 'eng', message: 'User is not in the group.', code: 'not-found' });
  const all = dataOf(t, await remove({ deleteAll: true }));
  t.same(outcome(all), { ok: ['u2', 'u3', 'u4'], failed: [] });
  t.same(await members(), []);

  expectError(t, await remove({}), 'INVALID_ARGUMENT', /data\.userIds is required unless data\.deleteAll is true/);
  expectError(t, await remove({ deleteAll: false }), 'INVALID_ARGUMENT', /data\.userIds is required/);
  expectError(t, await fx.call('/v2/organizations/usergroups/users/add', { organizationId: ORG, organizationUserGroupId: 'nope', userIds: ['u1'] }), 'NOT_FOUND', /data\.organizationUserGroupId/);
  expectError(t, await fx.call('/v2/organizations/usergroups/users/add', { organizationId: ORG, userIds: ['u1'] }), 'INVALID_ARGUMENT', /data\.organizationUserGroupId is required/);
});
