import { useEffect, useState } from "preact/hooks";
import { session, whenUnauthorized } from "./api/client";
import { Link, match, onNavigate, usePath } from "./router";
import { CampaignList, CampaignPage } from "./pages/campaigns";
import { ContactImport } from "./pages/contact-import";
import { ContactList, ContactPage } from "./pages/contacts";
import { DomainList, DomainPage } from "./pages/domains";
import { EmailList, EmailPage } from "./pages/emails";
import { EventList } from "./pages/events";
import { InboxList, InboxPage } from "./pages/inbox";
import { SegmentList, SegmentPage } from "./pages/segments";
import { SignIn } from "./pages/signin";
import { SuppressionList } from "./pages/suppressions";
import { TemplateList, TemplatePage } from "./pages/templates";
import { TopicList, TopicPage } from "./pages/topics";
import { WebhookList, WebhookPage } from "./pages/webhooks";
import { WorkflowList, WorkflowPage } from "./pages/workflows";
import type { JSX } from "preact";
import { SettingsPage } from "./pages/settings";

/** The sections in navigation order: each one's list page (`/campaigns`) and, where it has one, an item's page (`/campaigns/:id`). */
const SECTIONS: [string, () => JSX.Element, ((props: { id: string }) => JSX.Element)?][] = [
  ["Campaigns", CampaignList, CampaignPage],
  ["Templates", TemplateList, TemplatePage],
  ["Segments", SegmentList, SegmentPage],
  ["Contacts", ContactList, ContactPage],
  ["Topics", TopicList, TopicPage],
  ["Workflows", WorkflowList, WorkflowPage],
  ["Emails", EmailList, EmailPage],
  ["Inbox", InboxList, InboxPage],
  ["Events", EventList],
  ["Domains", DomainList, DomainPage],
  ["Webhooks", WebhookList, WebhookPage],
  ["Suppressions", SuppressionList],
  ["Settings", SettingsPage],
];
const NAV = SECTIONS.map(([name]) => name);

function Route(props: { path: string }) {
  if (props.path === "/contacts/import") return <ContactImport />;
  for (const [name, List, Item] of SECTIONS) {
    const base = `/${name.toLowerCase()}`;
    if (match(base, props.path)) return <List />;
    const params = Item && match(`${base}/:id`, props.path);
    if (Item && params) return <Item key={params.id} id={params.id} />;
  }
  return (
    <section class="page">
      <h1>Not found</h1>
      <p>
        No page at <code>{props.path}</code>. <Link href="/campaigns">Campaigns</Link>
      </p>
    </section>
  );
}

export function App() {
  const [signedIn, setSignedIn] = useState(() => session.key() !== null);
  const [menu, setMenu] = useState(false);
  const path = usePath();
  useEffect(() => {
    whenUnauthorized(() => {
      session.signOut();
      setSignedIn(false);
    });
  }, []);
  // Any navigation, to the same page too, closes the phone menu.
  useEffect(() => onNavigate(() => setMenu(false)), []);
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const section = `/${path.split("/")[1]}`;
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Edge Mail</span>
        <button type="button" class="menu" aria-expanded={menu} aria-controls="nav" onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <nav id="nav" aria-label="Main" class={menu ? "open" : ""}>
          <ul>
            {NAV.map((name) => {
              const href = `/${name.toLowerCase()}`;
              return (
                <li>
                  <Link href={href} aria-current={section === href ? "page" : undefined}>
                    {name}
                  </Link>
                </li>
              );
            })}
          </ul>
        </nav>
        <button
          type="button"
          class="signout"
          onClick={() => {
            session.signOut();
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main">
        <Route path={path} />
      </main>
    </div>
  );
}
