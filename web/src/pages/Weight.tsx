import { PageTitle } from '../components/ui';

/** Where the weekly weigh-in reminder leads; recording weights comes with the /me/weights API. */
export function Weight() {
  return (
    <>
      <PageTitle>Peso</PageTitle>
      <section class="card">
        <p>Presto potrai registrare qui il tuo peso e vederne l'andamento rispetto al tuo obiettivo.</p>
        <p>
          <a href="/">Torna a Oggi</a>
        </p>
      </section>
    </>
  );
}
