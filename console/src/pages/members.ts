import { useEffect, useState } from 'preact/hooks';
import type { components } from '../../../clients/typescript/src/index.ts';
import { api, ApiProblem, must } from '../api.ts';
import { Badge, ConfirmButton, Empty, ErrorBox, Loading, Notice, PageHeader, submitted } from '../components/ui.ts';
import { dateTime } from '../format.ts';
import { html } from '../html.ts';
import { useAction } from '../resource.ts';
import { ManagedMark, useManaged } from '../managed.ts';

type User = components['schemas']['OrganizationUser'];
type Role = components['schemas']['OrganizationRole'];

/** Whether `u` is the organization's only active owner (the API refuses to remove the last one). */
function lastOwner(list: User[], u: User): boolean {
  const owners = list.filter((m) => m.role === 'owner' && m.status === 'active');
  return owners.length === 1 && owners[0] === u;
}

/** Members and invitations: the organization's users, invite by email with a role, remove. */
export default function MembersPage() {
  const [users, setUsers] = useState<{ list: User[]; next: string | null }>();
  const [error, setError] = useState<ApiProblem>();
  const [invite, setInvite] = useState<{ email: string; role: Role }>({ email: '', role: 'user' });
  const [notice, setNotice] = useState<string>();
  const managed = useManaged();
  const load = async (cursor?: string) => {
    try {
      const page = await must(api.GET('/api/v0/organization/users', { params: { query: { limit: '50', ...(cursor ? { cursor } : {}) } } }));
      setUsers((u) => ({ list: [...(cursor ? (u?.list ?? []) : []), ...page.users], next: page.pagination.nextCursor }));
      setError(undefined);
    } catch (e) {
      setError(e as ApiProblem);
    }
  };
  useEffect(() => {
    void load();
  }, []);
  const send = useAction(async () => {
    const res = await must(api.POST('/api/v0/organization/users/invite', { body: invite }));
    setNotice(
      res.status === 'error'
        ? undefined
        : {
            invited: `Invitation sent to ${res.email}.`,
            already_member: `${res.email} is already a member.`,
            role_updated: `${res.email} is now ${res.role}.`,
            already_invited: `${res.email} already has a pending invitation.`,
          }[res.status],
    );
    // The API answers a refused invitation (the seat limit) with 200 and `status: error`.
    if (res.status === 'error') throw new ApiProblem(200, 'Invitation refused', res.error ?? 'The invitation failed');
    setInvite({ email: '', role: 'user' });
    await load();
  });
  const remove = useAction(async (email: string) => {
    await must(api.DELETE('/api/v0/organization/users', { params: { query: { email } } }));
    setNotice(`${email} was removed.`);
    await load();
  });
  return html`
    <${PageHeader} title="Members" />
    <section class="panel" aria-labelledby="invite-title">
      <h2 id="invite-title">Invite</h2>
      <form
        class="row"
        onSubmit=${submitted(() => send.run())}
      >
        <label>Email <input type="email" required value=${invite.email} onInput=${(e: Event) => setInvite({ ...invite, email: (e.target as HTMLInputElement).value })} /></label>
        <label
          >Role
          <select value=${invite.role} onChange=${(e: Event) => setInvite({ ...invite, role: (e.target as HTMLSelectElement).value as Role })}>
            <option value="guest">guest</option>
            <option value="user">user</option>
            <option value="manager">manager</option>
            <option value="owner">owner</option>
          </select>
        </label>
        <button type="submit" class="primary" disabled=${send.busy}>Invite</button>
      </form>
      <p class="hint">Inviting an existing member changes their role.</p>
      <${ErrorBox} error=${send.error} what="Not invited" />
    </section>
    <${Notice} text=${notice} />
    <${ErrorBox} error=${error ?? remove.error} />
    ${
      !users && !error
        ? html`<${Loading} />`
        : users && !users.list.length
          ? html`<${Empty} title="No members"><p>Invite someone by email above.</p><//>`
          : users
            ? html`<div class="table-wrap" tabindex="0" role="region" aria-label="Members and invitations">
                <table>
                  <caption class="sr-only">Members and invitations</caption>
                  <thead><tr><th scope="col">Email</th><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Joined</th><th scope="col">Last sign-in</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
                  <tbody>
                    ${users.list.map(
                      (u) => html`<tr key=${u.id}>
                        <th scope="row">${u.email}<${ManagedMark} of=${managed.find('Member', u.email)} /></th>
                        <td>${[u.firstName, u.lastName].filter(Boolean).join(' ') || '—'}</td>
                        <td>${u.role}${u.status === 'invited' ? html` <${Badge} value="invited" />` : null}</td>
                        <td>${dateTime(u.createdAt)}</td>
                        <td>${u.lastSignInAt ? dateTime(u.lastSignInAt) : 'never'}</td>
                        <td>
                          ${
                            !users.next && lastOwner(users.list, u)
                              ? html`<span class="muted">the only owner: make another member owner first</span>`
                              : html`<${ConfirmButton} label=${`Remove ${u.email}`} danger question=${`Remove ${u.email} from the organization (or revoke the invitation)?`} confirmLabel="Remove" onConfirm=${() => remove.run(u.email)} />`
                          }
                        </td>
                      </tr>`,
                    )}
                  </tbody>
                </table>
              </div>
              ${users.next ? html`<button type="button" onClick=${() => load(users.next!)}>Load more</button>` : null}`
            : null
    }
  `;
}
