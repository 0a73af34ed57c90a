import { PageTitle } from '../components/ui';

export function NotFound() {
  return (
    <section class="card">
      <PageTitle>Pagina non trovata</PageTitle>
      <p>L'indirizzo {location.pathname} non esiste.</p>
      <p>
        <a href="/">Torna a Oggi</a>
      </p>
    </section>
  );
}
