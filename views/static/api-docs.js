// The API reference at /apis/v2/docs: Swagger UI reading the service's OpenAPI document.
document.addEventListener('DOMContentLoaded', () => {
  const holder = document.getElementById('swagger-ui');
  window.SwaggerUIBundle({
    url: holder.getAttribute('data-spec-url'),
    domNode: holder,
    deepLinking: true,
    // No badge fetched from a validator elsewhere: the page talks to this origin only.
    validatorUrl: null,
    // "Try it out" sends the token the reader enters (Authorize) to this server's API.
    persistAuthorization: false,
  });
});
