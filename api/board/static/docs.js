// Swagger UI over this service's own spec; its assets come from the swagger-ui-bundle package.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
});
